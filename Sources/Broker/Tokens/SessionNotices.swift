import Foundation
import Synchronization

/// SessionNotices lets a flight wait for news of a session — a change notice from any replica
/// (another replica's refresh committed) — instead of polling the database.
///
/// Thread-safety: any thread. A waiter wakes on a notice or at its deadline, whichever first.
final class SessionNotices: Sendable {
    private let waiters = Mutex<[SessionKey: [DispatchSemaphore]]>([:])

    /// Blocks the calling (worker) thread until a notice for `key` or `until`.
    func wait(_ key: SessionKey, until: Date, now: Date) {
        let s = DispatchSemaphore(value: 0)
        waiters.withLock { $0[key, default: []].append(s) }
        _ = s.wait(timeout: .now() + max(0, until.timeIntervalSince(now)))
        waiters.withLock { w in
            w[key]?.removeAll { $0 === s }
            if w[key]?.isEmpty == true { w[key] = nil }
        }
    }

    func signal(_ key: SessionKey) {
        let woken = waiters.withLock { $0[key] ?? [] }
        for s in woken { s.signal() }
    }
}
