import BrokerCore
import Foundation
import Synchronization

/// PostgresAuditSink buffers audit events in memory and writes them in bulk (one INSERT from
/// unnest'ed arrays per flush). Identical events in one window (same actor, action, tenant,
/// session, outcome) become one row with their count and first and last instants, so auditing
/// every token hand-out (and app-token hand-out: the client is part of the event) costs the hot path a mutex (its thread's own: PerThread) and the
/// database one row per distinct event.
/// Events not yet flushed are lost if the process is killed (SIGTERM flushes); the buffer is
/// bounded and counts what it had to drop.
public final class PostgresAuditSink: AuditSink {
    struct Key: Hashable {
        let actor: String, action: String, tenant: String?, session: String?, outcome: String, client: String?

        /// One string hashed, not six: a session's events differ mostly by session, an app
        /// token's by client, the rest by actor; == still compares every field.
        func hash(into hasher: inout Hasher) { hasher.combine(session ?? client ?? actor) }
    }

    struct Tally {
        var first: Date
        var last: Date
        var count: Int
    }

    let pool: PGPool
    /// Each thread's tallies; the event tallied last is found again without a hash.
    private let buffer = PerThread { RecentDictionary<Key, Tally>() }
    /// Distinct events held, over every stripe (the bound is the buffer's, not a stripe's).
    private let held = Atomic<Int>(0)
    private let capacity: Int
    public let dropped = Atomic<Int>(0)
    /// One flush at a time: a flush that finds the buffers empty returns only once the events
    /// another flush took are written, so "flush, then read" reads them (the audit route does).
    private let flushing = Mutex(())

    public init(pool: PGPool, capacity: Int = 200_000) {
        self.pool = pool
        self.capacity = capacity
    }

    public func record(_ e: AuditEvent) {
        let kept = buffer.withLock { b in Self.add(e, to: &b, held: held, capacity: capacity) }
        if !kept { dropped.add(1, ordering: .relaxed) }
    }

    /// A batch's events under one lock (a single event takes the path above: no array).
    public func record(_ events: [AuditEvent]) {
        let lost = buffer.withLock { b in events.reduce(0) { $0 + (Self.add($1, to: &b, held: held, capacity: capacity) ? 0 : 1) } }
        if lost > 0 { dropped.add(lost, ordering: .relaxed) }
    }

    /// Tallies `e` into its thread's buffer; false when the buffer is full and the event is dropped.
    private static func add(_ e: AuditEvent, to b: inout RecentDictionary<Key, Tally>, held: borrowing Atomic<Int>, capacity: Int) -> Bool {
        let key = Key(actor: e.actor, action: e.action.rawValue, tenant: e.tenant, session: e.session, outcome: e.outcome, client: e.client)
        if let i = b.index(forKey: key) {   // one hash at most, not two
            var t = b[at: i]
            t.count += 1
            t.first = min(t.first, e.at)
            t.last = max(t.last, e.at)
            b[at: i] = t
            return true
        }
        guard held.wrappingAdd(1, ordering: .relaxed).newValue <= capacity else {
            held.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        b.set(key, Tally(first: e.at, last: e.at, count: 1))
        return true
    }

    public func flush() {
        flushing.withLock { _ in write() }
    }

    private func write() {
        var taken: [Key: Tally] = [:]
        buffer.forEach { b in
            for (k, t) in b.storage {
                guard let prior = taken[k] else { taken[k] = t; continue }
                taken[k] = Tally(first: min(prior.first, t.first), last: max(prior.last, t.last), count: prior.count + t.count)
            }
            held.wrappingSubtract(b.count, ordering: .relaxed)
            b.removeAll(keepingCapacity: true)
        }
        guard !taken.isEmpty else { return }
        let rows = taken.sorted { $0.value.first < $1.value.first }
        for start in stride(from: 0, to: rows.count, by: 5_000) {
            let chunk = rows[start..<min(start + 5_000, rows.count)]
            do {
                try pool.withConnection { c in
                    try c.execute("""
                        INSERT INTO audit_events (at, last_at, count, actor, action, tenant_id, session_id, outcome, client_id)
                        SELECT to_timestamp(at), to_timestamp(last_at), n::integer, actor, action, tenant, session, outcome, client
                        FROM unnest(\(chunk.map { $0.value.first.timeIntervalSince1970 }), \(chunk.map { $0.value.last.timeIntervalSince1970 }),
                                    \(chunk.map { Double($0.value.count) }), \(chunk.map(\.key.actor)), \(chunk.map(\.key.action)),
                                    \(chunk.map(\.key.tenant)), \(chunk.map(\.key.session)), \(chunk.map(\.key.outcome)),
                                    \(chunk.map(\.key.client)))
                             AS e(at, last_at, n, actor, action, tenant, session, outcome, client)
                        """)
                }
            } catch {
                // Put the events back for the next flush rather than lose them.
                buffer.withLock { b in
                    for (k, t) in chunk {
                        if var prior = b.value(forKey: k) {
                            prior.count += t.count
                            prior.first = min(prior.first, t.first)
                            prior.last = max(prior.last, t.last)
                            b.set(k, prior)
                        } else if held.wrappingAdd(1, ordering: .relaxed).newValue <= capacity {
                            b.set(k, t)
                        } else {
                            held.wrappingSubtract(1, ordering: .relaxed)
                            dropped.add(t.count, ordering: .relaxed)
                        }
                    }
                }
            }
        }
    }
}

extension PostgresAuditSink: AuditLog {
    public func events(tenant: String, matching q: AuditQuery) throws -> (records: [AuditRecord], next: Int64?) {
        try pool.run { c in
            let r = try c.execute("""
                SELECT id, extract(epoch from at) AS at, extract(epoch from last_at) AS last_at, count, actor, action, session_id, outcome, client_id
                FROM audit_events
                WHERE tenant_id = \(tenant)
                  AND (\(q.action?.rawValue)::text IS NULL OR action = \(q.action?.rawValue))
                  AND (\(q.session)::text IS NULL OR session_id = \(q.session))
                  AND (\(q.actor)::text IS NULL OR actor = \(q.actor))
                  AND (\(q.client)::text IS NULL OR client_id = \(q.client))
                  AND (\(q.since)::timestamptz IS NULL OR last_at >= \(q.since))
                  AND (\(q.until)::timestamptz IS NULL OR at < \(q.until))
                  AND (\(q.before.map(Int.init))::bigint IS NULL OR id < \(q.before.map(Int.init)))
                ORDER BY id DESC
                LIMIT \(q.limit + 1)
                """)
            // A row whose action this version does not know (written by a newer one) is left out.
            let records = try r.map { row -> AuditRecord? in
                guard let known = AuditAction(rawValue: try row["action"]) else { return nil }
                let event = try AuditEvent(at: row["at"], actor: row["actor"], action: known, tenant: tenant, session: row["session_id"],
                                           outcome: row["outcome"], client: row["client_id"])
                return try AuditRecord(id: row["id"], event: event, lastAt: row["last_at"], count: row["count"])
            }.compactMap { $0 }.prefix(q.limit)
            return (Array(records), r.count > q.limit ? records.last?.id : nil)
        }
    }
}
