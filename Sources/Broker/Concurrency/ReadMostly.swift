import Synchronization

/// ReadMostly guards a value read on every request and written rarely (caches of sessions,
/// tenants, clients, keys), keeping its read and write sites apart so that the lock can change
/// in one place. It is a plain Mutex: a POSIX read-write lock (writer-preferring) measured no
/// faster on the token path at the default two HTTP threads on two cores.
///
/// Thread-safety: any thread; `body` must not call back into the same lock.
public final class ReadMostly<Value>: @unchecked Sendable {
    private let lock = Mutex<Void>(())
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Reads under the lock.
    public func read<R>(_ body: (borrowing Value) throws -> R) rethrows -> R {
        try lock.withLock { _ in try body(value) }
    }

    /// Changes under the lock.
    public func write<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try lock.withLock { _ in try body(&value) }
    }
}
