import Glibc

/// PlainMutex guards a value with a default (non-priority-inheriting) pthread mutex, for a short
/// critical section that many threads take on every request. Swift's `Mutex` on Linux is a
/// priority-inheritance futex: it spins first, then FUTEX_LOCK_PI, and its unlock hands the lock
/// to a waiter the kernel chose, which may not be running. With more threads than cores that
/// makes a convoy: each owner is a thread waiting for a core, and the others spin behind it.
/// A pthread mutex's unlock only wakes a waiter; a running thread may take the lock first.
/// Measured on the DPoP hand-out (a signing context taken and put back per proof), 8 HTTP
/// threads on 2 cores: with a Mutex, 37% of the broker's CPU was in `Mutex._lockSlow` and a
/// hand-out cost 121 µs of CPU (10.5k req/s); with this, 40 µs (40.5k req/s). At 2 threads
/// the two are the same (42 µs).
///
/// Foundation's NSLock is the same kind of pthread mutex, but leaves the value it guards beside
/// it, reachable without the lock; this keeps it inside, as `Mutex` does, so a call site changes
/// only its type.
///
/// Thread-safety: any thread. `withLock` must not be entered again on the same thread.
public final class PlainMutex<Value>: @unchecked Sendable {
    @usableFromInline let lock: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` on the value alone.
    @inlinable
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&value)
    }
}
