import BrokerCore
import Foundation

/// WebhookOutbox is the statement the other stores add to the transaction that causes events
/// (a session's state change, a job's end): each event is written once, and one delivery per
/// endpoint of the tenant subscribed to its type — nothing at all when none is.
enum WebhookOutbox {
    static func enqueue(tenant: String, _ events: [WebhookEvent], now: Date) -> SQL? {
        guard !events.isEmpty else { return nil }
        var rng = SystemRandomNumberGenerator()
        let ids = events.map { _ in "evt_" + Identifiers.token(bytes: 16, using: &rng) }
        return """
            WITH e AS (
                INSERT INTO webhook_events (tenant_id, id, type, ordering_key, payload, created_at)
                SELECT \(tenant), x.id, x.type, x.key, x.payload, \(now)
                FROM unnest(\(ids), \(events.map(\.type.rawValue)), \(events.map(\.orderingKey)), \(events.map { $0.payload(at: now) }))
                     WITH ORDINALITY AS x(id, type, key, payload, n)
                WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.tenant_id = \(tenant) AND w.deleted_at IS NULL AND x.type = ANY(w.events))
                ORDER BY x.n
                RETURNING tenant_id, id, type, ordering_key, seq)
            INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, seq, ordering_key, state, next_attempt_at, created_at)
            SELECT e.tenant_id, w.id, e.id, e.seq, e.ordering_key, 'pending', \(now), \(now)
            FROM e JOIN webhook_endpoints w ON w.tenant_id = e.tenant_id AND w.deleted_at IS NULL AND e.type = ANY(w.events)
            """
    }
}
