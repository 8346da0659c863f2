import Foundation

/// RotationJournal remembers, per session, the last row this replica committed in a refresh
/// (an attempt recorded, a rotation written, a backoff), for `limits.maxAge`: what a failover
/// under asynchronous replication may have lost and this replica must be able to write again
/// (FailoverReapply). It holds payloads it cannot read (the driver seals them), and is bounded
/// in entries and bytes: past either bound the oldest entries go first. It does no I/O and
/// reads no clock.
///
/// Which write an entry keeps, when a session is written again, is decided on the refresh
/// tokens (compared by `tokenHash`, a per-process hash, never the token):
/// - a rotation (a write whose refresh token differs from the row it was written over) always
///   replaces the entry: it holds the newest token the IdP gave;
/// - any other write replaces an entry holding the same refresh token;
/// - a write over another token than the entry's keeps the entry: it was made over a row that
///   lacks the entry's rotation (the new server rolled it back), and the rotation must survive
///   until it is re-applied.
public struct RotationJournal<Payload: Sendable>: Sendable {
    public typealias Limits = RotationJournalLimits

    public struct Key: Sendable, Hashable {
        public let tenant: String
        public let id: String
        public init(tenant: String, id: String) {
            self.tenant = tenant
            self.id = id
        }
    }

    public struct Entry: Sendable {
        public let key: Key
        public let version: Int64
        public let tokenHash: Int
        public let at: Date
        public let bytes: Int
        public let payload: Payload
        fileprivate let sequence: Int
    }

    public let limits: Limits
    private var entries: [Key: Entry] = [:]
    /// Keys in the order written; an element whose sequence no longer matches its entry's is
    /// stale (the key was written again since) and skipped.
    private var order: [(key: Key, sequence: Int)] = []
    private var head = 0
    private var nextSequence = 0
    public private(set) var bytes = 0
    /// Entries dropped by the count or byte bound before their age (a journal too small).
    public private(set) var evictedEarly = 0

    public init(limits: Limits) { self.limits = limits }

    public var count: Int { entries.count }

    /// The entry of `key`, if it is still kept.
    public func entry(_ key: Key, now: Date) -> Entry? {
        entries[key].flatMap { now.timeIntervalSince($0.at) <= limits.maxAge ? $0 : nil }
    }

    /// Records a committed write of `key` at `version` holding a refresh token hashed as
    /// `tokenHash`; `rotation` when that token differs from the row written over. True when
    /// the entry now holds this write.
    @discardableResult
    public mutating func record(_ key: Key, version: Int64, tokenHash: Int, rotation: Bool, bytes size: Int,
                                payload: Payload, now: Date) -> Bool {
        if let old = entries[key], !rotation, old.tokenHash != tokenHash, now.timeIntervalSince(old.at) <= limits.maxAge {
            return false
        }
        if let old = entries.removeValue(forKey: key) { bytes -= old.bytes }
        let e = Entry(key: key, version: version, tokenHash: tokenHash, at: now, bytes: size, payload: payload, sequence: nextSequence)
        nextSequence += 1
        entries[key] = e
        bytes += size
        order.append((key, e.sequence))
        evict(now: now)
        return true
    }

    /// Drops what is older than `maxAge`, then the oldest past the bounds.
    public mutating func evict(now: Date) {
        while head < order.count {
            let (key, sequence) = order[head]
            guard let e = entries[key], e.sequence == sequence else { head += 1; continue }
            let old = now.timeIntervalSince(e.at) > limits.maxAge
            guard old || entries.count > limits.maxEntries || bytes > limits.maxBytes else { break }
            if !old { evictedEarly += 1 }
            entries.removeValue(forKey: key)
            bytes -= e.bytes
            head += 1
        }
        if head > 1_024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }

    /// Every entry still kept, oldest first.
    public func current(now: Date) -> [Entry] {
        entries.values.filter { now.timeIntervalSince($0.at) <= limits.maxAge }.sorted { $0.sequence < $1.sequence }
    }
}

/// How much a RotationJournal keeps: entries younger than `maxAge`, at most `maxEntries` of
/// them and about `maxBytes` (TOKENBROKER_FAILOVER_JOURNAL_*).
public struct RotationJournalLimits: Sendable, Equatable {
    public var maxAge: TimeInterval
    public var maxEntries: Int
    public var maxBytes: Int

    public init(maxAge: TimeInterval = 300, maxEntries: Int = 50_000, maxBytes: Int = 64 << 20) {
        self.maxAge = maxAge
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
    }
}
