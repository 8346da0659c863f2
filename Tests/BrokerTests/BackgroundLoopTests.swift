@testable import Broker
import Foundation
import Synchronization
import Testing

@Suite("Background loops: start, stop, failures")
struct BackgroundLoopTests {
    struct Boom: Error {}

    @Test("a sleeping loop stops at once; stop twice, or before start, returns; a failed pass is reported and the loop goes on; a pass that returns is reported as passed")
    func lifecycle() {
        let passes = Atomic<Int>(0), failures = Atomic<Int>(0), passed = Atomic<Int>(0)
        let loop = BackgroundLoop("test", every: 30, first: 0, failed: { _ in failures.add(1, ordering: .relaxed) },
                                  passed: { passed.add(1, ordering: .relaxed) }) {
            // The first pass says "more now"; the second fails, which is reported, and the loop sleeps.
            if passes.add(1, ordering: .relaxed).newValue == 2 { throw Boom() }
            return true
        }
        loop.start()
        let deadline = Date().addingTimeInterval(5)
        while passes.load(ordering: .relaxed) < 2 || failures.load(ordering: .relaxed) < 1, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let started = Date()
        loop.stop()
        #expect(Date().timeIntervalSince(started) < 1, "stop waited for the 30 s sleep")
        loop.stop()
        #expect(passes.load(ordering: .relaxed) == 2 && failures.load(ordering: .relaxed) == 1)
        #expect(passed.load(ordering: .relaxed) == 1)   // the first pass (OutageLog hears it)
        BackgroundLoop("never", every: 1, failed: { _ in }) { false }.stop()
    }
}
