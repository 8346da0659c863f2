import BrokerCore
import Foundation
import Synchronization

/// RecordingAuditSink keeps every event for assertions, and as an AuditLog the rows a flush
/// would store: identical events of one flush window are one row with their count (the
/// contract PostgresAuditSink honours too: AuditLogContract).
public final class RecordingAuditSink: AuditSink, AuditLog {
    private let events = Mutex<[AuditEvent]>([])
    private let unflushed = Mutex<[AuditEvent]>([])
    private let rows = Mutex<[AuditRecord]>([])
    public init() {}

    public func record(_ e: AuditEvent) {
        events.withLock { $0.append(e) }
        unflushed.withLock { $0.append(e) }
    }

    public func flush() {
        let taken = unflushed.withLock { u in defer { u.removeAll() }; return u }
        var groups: [(AuditEvent, last: Date, count: Int)] = []
        for e in taken {
            if let i = groups.firstIndex(where: { g in Self.same(g.0, e) }) {
                groups[i].last = max(groups[i].last, e.at)
                groups[i].count += 1
            } else {
                groups.append((e, e.at, 1))
            }
        }
        rows.withLock { r in
            for g in groups.sorted(by: { $0.0.at < $1.0.at }) {
                r.append(AuditRecord(id: Int64(r.count + 1), event: g.0, lastAt: g.last, count: g.count))
            }
        }
    }

    public var recorded: [AuditEvent] { events.withLock { $0 } }

    static func same(_ a: AuditEvent, _ b: AuditEvent) -> Bool {
        a.actor == b.actor && a.action == b.action && a.tenant == b.tenant && a.session == b.session && a.outcome == b.outcome && a.client == b.client
    }

    public func events(tenant: String, matching q: AuditQuery) throws -> (records: [AuditRecord], next: Int64?) {
        let matching = rows.withLock { $0 }.filter { r in
            r.event.tenant == tenant && (q.action.map { $0 == r.event.action } ?? true) && (q.session.map { $0 == r.event.session } ?? true)
                && (q.actor.map { $0 == r.event.actor } ?? true) && (q.client.map { $0 == r.event.client } ?? true) && (q.since.map { r.lastAt >= $0 } ?? true)
                && (q.until.map { r.event.at < $0 } ?? true) && (q.before.map { r.id < $0 } ?? true)
        }.sorted { $0.id > $1.id }
        let page = Array(matching.prefix(q.limit))
        return (page, matching.count > q.limit ? page.last?.id : nil)
    }
}
