import BrokerCore
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

@Suite("Plain mutex")
struct PlainMutexTests {
    @Test("one thread at a time: eight threads' read-modify-writes are all counted")
    func exclusive() {
        let shared = PlainMutex(0)
        let peek = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<5_000 {
                shared.withLock { v in
                    let read = v
                    for _ in 0..<10 { _ = peek.load(ordering: .relaxed) }   // widens the window a lost update would need
                    v = read + 1
                }
            }
        }
        #expect(shared.withLock { $0 } == 40_000)
    }

    /// What the type is for: Swift's Mutex on Linux (FUTEX_UNLOCK_PI) gives the lock to the
    /// sleeping waiter at unlock, so the running thread that unlocked queues behind a thread that
    /// still has to be scheduled; with more threads than cores that makes convoys. A plain mutex
    /// only wakes the waiter, and the running thread may take the lock again before it. Here
    /// the unlocker won 8 – 17 of 20 trials (the woken waiter is often scheduled in time on the
    /// other core); with hand-over it cannot win one.
    @Test("unlock wakes a sleeping waiter but does not hand it the lock: the running thread can relock first")
    func noHandOver() throws {
        var unlockerFirst = 0, seenAsleep = 0
        for _ in 0..<20 {
            let shared = PlainMutex<[String]>([])
            let task = Mutex<String?>(nil)
            let waiterDone = DispatchSemaphore(value: 0)
            shared.withLock { order in
                Thread.detachNewThread {
                    // "<pid>/task/<tid>": the waiter's own entry under /proc.
                    task.withLock { $0 = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") }
                    shared.withLock { $0.append("waiter") }
                    waiterDone.signal()
                }
                // Until the waiter sleeps in the kernel on the lock (state S), bounded.
                let deadline = Date().addingTimeInterval(10)
                while Date() < deadline {
                    if let t = task.withLock({ $0 }), Self.state(of: t) == "S" { seenAsleep += 1; break }
                    usleep(200)
                }
                order.append("unlocker")
            }
            shared.withLock { $0.append("unlocker again") }
            #expect(waiterDone.wait(timeout: .now() + 10) == .success)
            let order = shared.withLock { $0 }
            #expect(order.count == 3)
            if order == ["unlocker", "unlocker again", "waiter"] { unlockerFirst += 1 }
        }
        #expect(seenAsleep == 20)
        #expect(unlockerFirst >= 1, "the unlocking thread relocked first in none of 20 trials: unlock handed the lock over")
    }

    /// The scheduler state of a thread of this process, `task` being "<pid>/task/<tid>" (proc(5):
    /// the field after the name in its stat file).
    static func state(of task: String) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(task)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(close, offsetBy: 2)...].first
    }
}
