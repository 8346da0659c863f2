@testable import Broker
import Foundation
import Synchronization
import Testing

@Suite("Blocking executor")
struct BlockingExecutorTests {
    @Test("run: inline on one of its own threads (one hop per request), queued from any other")
    func runStaysOnItsThread() async {
        let executor = BlockingExecutor(threads: 2, name: "test-exec")
        let seen = Mutex<(outer: UInt, inner: UInt, onExecutor: Bool)?>(nil)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            executor.submit {
                let outer = UInt(pthread_self())
                executor.run {
                    seen.withLock { $0 = (outer, UInt(pthread_self()), executor.isCurrent) }
                    done.resume()
                }
            }
        }
        let s = seen.withLock { $0 }
        #expect(s?.outer == s?.inner && s?.onExecutor == true)
        #expect(!executor.isCurrent, "the test's thread is not the executor's")
        let queued = Mutex<Bool>(false)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            executor.run {
                queued.withLock { $0 = executor.isCurrent }
                done.resume()
            }
        }
        #expect(queued.withLock { $0 }, "called from another thread, the work still runs on the executor")
        executor.shutdown()
    }
}
