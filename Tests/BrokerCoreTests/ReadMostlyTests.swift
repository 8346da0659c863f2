import BrokerCore
import Dispatch
import Foundation
import Synchronization
import Testing

@Suite("Read-mostly lock")
struct ReadMostlyTests {
    /// Eight fields a writer sets one at a time: a reader that saw two differ saw half a write.
    struct Eight: Sendable {
        var a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0
        var same: Bool { [b, c, d, e, f, g, h].allSatisfy { $0 == a } }
    }

    @Test("readers on every thread never see half a write, and see each write once it returned")
    func writesAreWhole() {
        let shared = ReadMostly(Eight())
        let torn = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let readers = DispatchGroup()
        for _ in 0..<6 {
            readers.enter()
            Thread.detachNewThread {
                defer { readers.leave() }
                while !stop.load(ordering: .acquiring) {
                    if !shared.read({ $0.same }) { torn.add(1, ordering: .relaxed) }
                }
            }
        }
        for i in 1...2_000 {
            shared.write { v in
                v.a = i; v.b = i; v.c = i; v.d = i
                for _ in 0..<20 { _ = torn.load(ordering: .relaxed) }   // widens the window a torn read would need
                v.e = i; v.f = i; v.g = i; v.h = i
            }
            #expect(shared.read { $0.a } == i)
        }
        stop.store(true, ordering: .releasing)
        readers.wait()
        #expect(torn.load(ordering: .relaxed) == 0)
    }

    @Test("a reader held inside read does not hold up other threads' readers")
    func readersShare() {
        let shared = ReadMostly(1)
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            shared.read { _ in
                inside.signal()
                release.wait()
            }
        }
        inside.wait()
        // Eight other threads read; with one lock for all, none could finish. Each thread's
        // stripe is one of 16, so some may share the held one: those finish once it is released.
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<8 {
            Thread.detachNewThread { _ = shared.read { $0 }; done.signal() }
        }
        #expect(done.wait(timeout: .now() + 10) == .success, "another thread's reader got through while one was held")
        release.signal()
        for _ in 0..<7 { #expect(done.wait(timeout: .now() + 10) == .success) }
        shared.write { $0 = 2 }
        #expect(shared.read { $0 } == 2)
    }
}
