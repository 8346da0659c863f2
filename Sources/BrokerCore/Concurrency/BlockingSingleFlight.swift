import Foundation
import Synchronization

/// BlockingSingleFlight lets threads that need the same value at once share one computation:
/// the first caller for a key runs `work`; callers arriving while it runs block until it ends
/// and get its outcome — the value or the error — without running `work` themselves. A caller
/// arriving after the flight ended starts a new one: what spares later callers is the caller's
/// own cache, which `work` fills before the flight ends (so a new leader should look there first).
///
/// It lives in the core because it does no I/O and owns no thread; the provider metadata and key
/// caches use it.
///
/// Thread-safety: any thread. `work` runs on the leader's thread, outside every lock. Meant for
/// blocking worker threads: a follower holds its thread while it waits.
public final class BlockingSingleFlight<Key: Hashable & Sendable, Value: Sendable, Failure: Error>: Sendable {
    /// One computation in progress and, once it ended, its outcome.
    private final class Flight: @unchecked Sendable {
        private let ended = NSCondition()
        /// Guarded by `ended`.
        private var outcome: Result<Value, Failure>?
        /// Callers waiting for the outcome; guarded by the table's lock.
        var followers = 0

        func wait() -> Result<Value, Failure> {
            ended.lock()
            defer { ended.unlock() }
            while outcome == nil { ended.wait() }
            return outcome!
        }

        func finish(_ o: Result<Value, Failure>) {
            ended.lock()
            outcome = o
            ended.broadcast()
            ended.unlock()
        }
    }

    private let flights = Mutex<[Key: Flight]>([:])

    public init() {}

    /// The value for `key`: computed by `work` on this thread, or, when a computation for `key`
    /// is already in progress, that computation's outcome.
    public func run(_ key: Key, _ work: () throws(Failure) -> Value) throws(Failure) -> Value {
        let (flight, leads) = flights.withLock { f -> (Flight, Bool) in
            if let running = f[key] {
                running.followers += 1
                return (running, false)
            }
            let new = Flight()
            f[key] = new
            return (new, true)
        }
        guard leads else { return try flight.wait().get() }
        let outcome: Result<Value, Failure>
        do { outcome = .success(try work()) } catch { outcome = .failure(error) }
        // Out of the table first: a caller arriving from now on starts anew (and finds the cache `work` filled).
        _ = flights.withLock { $0.removeValue(forKey: key) }
        flight.finish(outcome)
        return try outcome.get()
    }

    /// Callers waiting for the computation of `key` in progress (0 when none is).
    public func followers(_ key: Key) -> Int { flights.withLock { $0[key]?.followers ?? 0 } }

    /// Computations in progress.
    public var inFlight: Int { flights.withLock { $0.count } }
}
