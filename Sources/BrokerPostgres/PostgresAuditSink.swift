import BrokerCore
import Foundation
import Synchronization

/// PostgresAuditSink buffers audit events in memory and writes them in bulk (one INSERT from
/// unnest'ed arrays per flush). `record` never blocks on I/O, so auditing every token hand-out
/// costs the hot path a mutex, not a round trip. Events not yet flushed are lost if the process
/// is killed (SIGTERM flushes); the buffer is bounded and counts what it had to drop.
public final class PostgresAuditSink: AuditSink {
    private let pool: PGPool
    private let buffer = Mutex<[AuditEvent]>([])
    private let capacity: Int
    public let dropped = Atomic<Int>(0)

    public init(pool: PGPool, capacity: Int = 200_000) {
        self.pool = pool
        self.capacity = capacity
    }

    public func record(_ event: AuditEvent) {
        let kept = buffer.withLock { b -> Bool in
            guard b.count < capacity else { return false }
            b.append(event)
            return true
        }
        if !kept { dropped.add(1, ordering: .relaxed) }
    }

    public func flush() {
        let events = buffer.withLock { b in
            defer { b.removeAll(keepingCapacity: true) }
            return b
        }
        guard !events.isEmpty else { return }
        for chunk in stride(from: 0, to: events.count, by: 5_000).map({ events[$0..<min($0 + 5_000, events.count)] }) {
            do {
                try pool.withConnection { c in
                    try c.execute("""
                        INSERT INTO audit_events (at, actor, action, tenant_id, session_id, outcome)
                        SELECT to_timestamp(at), actor, action, tenant, session, outcome
                        FROM unnest(\(chunk.map { $0.at.timeIntervalSince1970 }), \(chunk.map(\.actor)), \(chunk.map(\.action)),
                                    \(chunk.map(\.tenant)), \(chunk.map(\.session)), \(chunk.map(\.outcome)))
                             AS e(at, actor, action, tenant, session, outcome)
                        """)
                }
            } catch {
                // Put the events back for the next flush rather than lose them.
                buffer.withLock { b in if b.count + chunk.count <= capacity { b.insert(contentsOf: chunk, at: 0) } }
            }
        }
    }
}
