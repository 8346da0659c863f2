import Glibc

/// ReadMostly guards a value that every request reads and few change (the hot path's caches of
/// API keys, tenants, clients and sessions) so that readers of different threads neither wait
/// for each other nor write one cache line: a reader locks one of 16 mutexes, picked by its
/// thread (as PerThread does; two threads may draw the same), and a writer locks all 16 in
/// order. Under one Mutex, a reader descheduled inside the lock left the others spinning
/// (Swift's Mutex spins before it sleeps): with more HTTP threads than cores a cached hand-out
/// cost 2-3 times its CPU (8 threads on 2 cores: 51-67 against 21-24 µs).
///
/// A write costs 16 lock operations: this is for values read on every request and changed on
/// loads and notices. `read` must not be entered again from inside itself, nor `write` from
/// inside `read`, on the same thread (as with a Mutex).
///
/// Thread-safety: any thread.
public final class ReadMostly<Value>: @unchecked Sendable {
    @usableFromInline static var stripes: Int { 16 }
    /// A cache line per stripe, so that two threads' readers never write the same line.
    @usableFromInline static var stride: Int { 64 }
    @usableFromInline let locks: UnsafeMutableRawPointer
    @usableFromInline var value: Value

    public init(_ value: Value) {
        precondition(MemoryLayout<pthread_mutex_t>.size <= Self.stride)
        self.value = value
        locks = .allocate(byteCount: Self.stripes * Self.stride, alignment: Self.stride)
        for i in 0..<Self.stripes {
            pthread_mutex_init(Self.lock(locks, i), nil)
        }
    }

    deinit {
        for i in 0..<Self.stripes {
            pthread_mutex_destroy(Self.lock(locks, i))
        }
        locks.deallocate()
    }

    @usableFromInline
    static func lock(_ locks: UnsafeMutableRawPointer, _ i: Int) -> UnsafeMutablePointer<pthread_mutex_t> {
        (locks + i * stride).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// Runs `body` on the value, alongside other threads' readers.
    @inlinable
    public func read<R>(_ body: (Value) throws -> R) rethrows -> R {
        // The thread's id, mixed (ids are aligned addresses), as in PerThread.
        let id = UInt(pthread_self()) &* 0x9e37_79b9_7f4a_7c15
        let l = Self.lock(locks, Int((id >> 32) % UInt(Self.stripes)))
        pthread_mutex_lock(l)
        defer { pthread_mutex_unlock(l) }
        return try body(value)
    }

    /// Runs `body` on the value alone.
    @inlinable
    public func write<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        for i in 0..<Self.stripes { pthread_mutex_lock(Self.lock(locks, i)) }
        defer { for i in (0..<Self.stripes).reversed() { pthread_mutex_unlock(Self.lock(locks, i)) } }
        return try body(&value)
    }
}
