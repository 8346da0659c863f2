import BrokerCore
import Foundation
import Synchronization

/// ResealService re-seals every sealed value under the current key (`tokenbroker sealing-key
/// reseal`), batch after batch while replicas serve, and walks again as long as a walk found
/// something: rows a refresh held were skipped, and are found the next time. It also keeps the
/// fleet's last count of values by key for `tokenbroker_sealed_values`: counting reads every
/// sealed value, so one replica counts for all (`follow`) and every count made here is kept
/// as the fleet's.
public final class ResealService: Sendable {
    let store: any SealedValueStore
    /// The key values are re-sealed under (nil: this keyring seals nothing, so nothing is re-sealed).
    public let current: String?
    private let counted = Mutex<SealedValueCount?>(nil)

    public init(store: any SealedValueStore, current: String?) {
        self.store = store
        self.current = current
    }

    public struct Summary: Sendable {
        public var resealed = 0
        /// Values that do not open here (a key this keyring lacks): left as they are.
        public var unopenable = 0
        public var passes = 0
        /// Values by key after the last walk (pending logins keep theirs until they expire).
        public var values: [String: Int] = [:]
        /// Values `reseal` re-seals still under another key after the last walk: rows a refresh
        /// held every time, or written meanwhile by a replica whose keyring seals with an older key.
        public var remaining = 0
    }

    /// Re-seals until a walk finds nothing more (at most `maxPasses` walks); `progress` hears
    /// (re-sealed so far, values under another key when it began) after each batch.
    public func run(batch: Int = 200, maxPasses: Int = 5, now: @Sendable () -> Date = Date.init,
                    progress: (Int, Int) -> Void = { _, _ in }) throws -> Summary {
        guard current != nil else { throw BrokerError.badRequest(code: "no_sealing_key", message: "no sealing key configured to re-seal under") }
        var s = Summary()
        let total = try count(now: now()).filter { $0.key != current }.values.reduce(0, +)
        while s.passes < maxPasses {
            s.passes += 1
            var found = 0, cursor: ResealBatch.Cursor?
            s.unopenable = 0
            repeat {
                let b = try store.reseal(after: cursor, limit: batch)
                found += b.resealed
                s.unopenable += b.unopenable
                cursor = b.next
                s.resealed += b.resealed
                progress(s.resealed, total)
            } while cursor != nil
            if found == 0 { break }
        }
        s.values = try count(now: now())
        s.remaining = try store.countByKey(pendingLogins: false).filter { $0.key != current }.values.reduce(0, +) - s.unopenable
        return s
    }

    /// Sealed values by key id, counted now (kept as the fleet's, and for `lastCount`).
    @discardableResult
    public func count(now: Date) throws -> [String: Int] {
        let c = try store.recount(now: now)
        counted.withLock { $0 = c }
        return c.values
    }

    /// Takes the fleet's count for `lastCount`, counting first if it is older than `maxAge` and
    /// no other replica is counting.
    public func follow(maxAge: TimeInterval, now: Date) throws {
        let c = try store.sharedCount(maxAge: maxAge, now: now)
        counted.withLock { $0 = c }
    }

    /// The last count taken (nil before the first, or while the fleet has never counted).
    public var lastCount: [String: Int]? { counted.withLock { c in c?.countedAt == nil ? nil : c?.values } }
}
