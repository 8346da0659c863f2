import Broker
import Foundation
import Synchronization
import Testing

@Suite("Refresh pool caps")
struct RefreshPoolTests {
    final class Gauge: Sendable {
        let state = Mutex<(now: [String: Int], peak: [String: Int], total: Int, peakTotal: Int)>(([:], [:], 0, 0))
        func enter(_ c: String) {
            state.withLock { s in
                s.now[c, default: 0] += 1
                s.total += 1
                s.peak[c] = max(s.peak[c] ?? 0, s.now[c]!)
                s.peakTotal = max(s.peakTotal, s.total)
            }
        }
        func leave(_ c: String) { state.withLock { s in s.now[c]! -= 1; s.total -= 1 } }
    }

    @Test("a burst never exceeds the global cap nor any client's cap, and every job runs")
    func capsHold() {
        let pool = RefreshPool(globalCap: 6)
        let gauge = Gauge()
        let done = DispatchGroup()
        let caps = ["a": 1, "b": 2, "c": 8]
        for i in 0..<90 {
            let client = ["a", "b", "c"][i % 3]
            done.enter()
            pool.submit(RefreshPool.Job(client: client, cap: caps[client]!) {
                gauge.enter(client)
                usleep(2_000)
                gauge.leave(client)
                done.leave()
            })
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let s = gauge.state.withLock { $0 }
        #expect(s.peak["a"] == 1 && (s.peak["b"] ?? 0) <= 2 && s.peakTotal <= 6)
        #expect(s.peakTotal >= 3, "the pool ran work in parallel")
        pool.shutdown()
    }
}
