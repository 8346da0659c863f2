import BrokerCore
import Dispatch
import Foundation
import Synchronization
import Testing

@Suite("Blocking single-flight")
struct BlockingSingleFlightTests {
    struct Refused: Error, Equatable { let n: Int }

    /// Waits until `ready` holds: the leader's work is held open until every other caller has
    /// joined its flight (a barrier, not a delay). Gives up after 10 s so a bug fails, not hangs.
    static func hold(until ready: () -> Bool) {
        let deadline = Date().addingTimeInterval(10)
        while !ready(), Date() < deadline { sched_yield() }
    }

    /// Runs `body(i)` for `0..<n` on n threads of their own (not a pool that may run them one
    /// after another), and returns when all have returned.
    static func onThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let done = DispatchGroup()
        for i in 0..<n {
            done.enter()
            Thread.detachNewThread {
                body(i)
                done.leave()
            }
        }
        done.wait()
    }

    @Test("sixteen threads missing at once: one computation, every thread gets its value")
    func concurrentCallersShareOneComputation() {
        let flights = BlockingSingleFlight<String, Int, Refused>()
        let runs = Atomic<Int>(0)
        let got = Mutex<[Int]>([])
        let n = 16
        Self.onThreads(n) { _ in
            let v = try? flights.run("https://idp.example") { () throws(Refused) -> Int in
                let mine = runs.add(1, ordering: .relaxed).newValue
                Self.hold { flights.followers("https://idp.example") == n - 1 }
                return 42 + mine
            }
            got.withLock { $0.append(v ?? -1) }
        }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(got.withLock { $0 } == Array(repeating: 43, count: n))
        #expect(flights.inFlight == 0)
    }

    @Test("the computation's error is every waiting caller's error, and is not retried by each")
    func errorIsShared() {
        let flights = BlockingSingleFlight<String, Int, Refused>()
        let runs = Atomic<Int>(0)
        let errors = Mutex<[Refused]>([])
        let n = 8
        Self.onThreads(n) { _ in
            do throws(Refused) {
                _ = try flights.run("k") { () throws(Refused) -> Int in
                    runs.add(1, ordering: .relaxed)
                    Self.hold { flights.followers("k") == n - 1 }
                    throw Refused(n: 7)
                }
            } catch {
                errors.withLock { $0.append(error) }
            }
        }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(errors.withLock { $0 } == Array(repeating: Refused(n: 7), count: n))
    }

    @Test("different keys fly apart: a computation for one never answers a caller of another")
    func keysAreSeparate() {
        let flights = BlockingSingleFlight<String, String, Refused>()
        let runs = Atomic<Int>(0)
        let got = Mutex<[String: String]>([:])
        Self.onThreads(2) { i in
            let key = i == 0 ? "issuer|deployment" : "issuer|anchors-of-b"
            let v = try? flights.run(key) { () throws(Refused) -> String in
                runs.add(1, ordering: .relaxed)
                Self.hold { runs.load(ordering: .relaxed) == 2 }   // both computations run at once
                return "document for " + key
            }
            got.withLock { $0[key] = v }
        }
        #expect(runs.load(ordering: .relaxed) == 2)
        #expect(got.withLock { $0 } == ["issuer|deployment": "document for issuer|deployment",
                                        "issuer|anchors-of-b": "document for issuer|anchors-of-b"])
    }

    @Test("a caller after the flight ended computes anew: the outcome is not kept (the caller's cache keeps values)")
    func endedFlightIsNotACache() throws {
        let flights = BlockingSingleFlight<String, Int, Refused>()
        var runs = 0
        _ = try flights.run("k") { () throws(Refused) -> Int in runs += 1; return runs }
        #expect(try flights.run("k") { () throws(Refused) -> Int in runs += 1; return runs } == 2)
        #expect(throws: Refused(n: 1)) { try flights.run("k") { () throws(Refused) -> Int in throw Refused(n: 1) } }
        #expect(try flights.run("k") { () throws(Refused) -> Int in 5 } == 5)
    }
}
