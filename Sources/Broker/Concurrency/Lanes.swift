import Foundation
import Synchronization

/// Lanes runs `body` for every index in 0..<count on up to `width` threads of its own, each
/// taking the next index when it is done with one, and returns when all are done. For work that
/// waits on the network or the database: DispatchQueue.concurrentPerform would run only as many
/// at once as there are cores.
enum Lanes {
    static func run(_ count: Int, width: Int, _ body: @escaping @Sendable (Int) -> Void) {
        guard count > 0 else { return }
        let next = Atomic<Int>(0)
        let done = DispatchGroup()
        for _ in 0..<min(max(1, width), count) {
            done.enter()
            Thread {
                while case let i = next.add(1, ordering: .relaxed).oldValue, i < count { body(i) }
                done.leave()
            }.start()
        }
        done.wait()
    }
}
