import Synchronization

/// SingleFlight lets concurrent callers for the same key share one piece of work: the first
/// caller leads and runs it, the others wait for its result without holding a thread.
///
/// Thread-safety: all methods may be called from any thread. Callbacks run on the thread that
/// calls `finish`, outside the lock.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let waiting = Mutex<[Key: [@Sendable (Value) -> Void]]>([:])

    public init() {}

    /// Registers `callback` for `key`. Returns true when the caller leads: it must run the work
    /// and call `finish(key, value)` exactly once.
    public func join(_ key: Key, _ callback: @escaping @Sendable (Value) -> Void) -> Bool {
        waiting.withLock { w in
            if w[key] != nil {
                w[key]!.append(callback)
                return false
            }
            w[key] = [callback]
            return true
        }
    }

    /// Ends the flight for `key`, handing `value` to the leader and every follower.
    public func finish(_ key: Key, _ value: Value) {
        let callbacks = waiting.withLock { $0.removeValue(forKey: key) } ?? []
        for c in callbacks { c(value) }
    }

    /// The number of flights in the air.
    public var inFlight: Int { waiting.withLock { $0.count } }
}
