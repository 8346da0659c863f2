import BrokerCore
import Foundation

/// PostgresRetentionStore deletes one batch per call, in key order and skipping rows another
/// transaction holds (a session being refreshed or revoked right now is left for the next run).
/// Each statement reads through its tenant's partial index (migration 010). The batch is an
/// ARRAY(...) read once: an `IN (SELECT … LIMIT … SKIP LOCKED)` may be rescanned by a join and,
/// skipping the rows it just locked, delete more than its limit (measured: 3 for a limit of 2).
public final class PostgresRetentionStore: RetentionStore {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    public func purge(_ kind: RetentionKind, tenant: String?, before: Date, limit: Int) throws -> Int {
        try pool.run { c in
            switch kind {
            case .auditEvents:
                // `=` or `IS NULL`, never `IS NOT DISTINCT FROM`: only those read an index
                // (audit_by_tenant, or the partial audit_without_tenant).
                let owner: SQL = tenant.map { "tenant_id = \($0)" } ?? "tenant_id IS NULL"
                return try c.execute("""
                    DELETE FROM audit_events WHERE id = ANY(ARRAY(
                        SELECT id FROM audit_events
                        WHERE \(owner) AND at < \(before) AND last_at < \(before)
                        ORDER BY at LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                    """).affected
            case .endedSessions:
                guard let tenant else { return 0 }
                // A revocation still in the outbox keeps its session: the admin can see it pending.
                return try c.execute("""
                    DELETE FROM sessions WHERE tenant_id = \(tenant) AND id = ANY(ARRAY(
                        SELECT s.id FROM sessions s
                        WHERE s.tenant_id = \(tenant) AND s.state <> 'active' AND s.ended_at < \(before)
                          AND NOT EXISTS (SELECT 1 FROM revocation_outbox o WHERE o.session_id = s.id AND o.tenant_id = s.tenant_id)
                        ORDER BY s.id LIMIT \(limit) FOR UPDATE OF s SKIP LOCKED))
                      AND state <> 'active'
                    """).affected
            case .finishedSignouts:
                guard let tenant else { return 0 }
                return try c.execute("""
                    DELETE FROM signout_jobs WHERE tenant_id = \(tenant) AND id = ANY(ARRAY(
                        SELECT id FROM signout_jobs
                        WHERE tenant_id = \(tenant) AND state = 'done' AND finished_at < \(before)
                        ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                    """).affected
            case .webhookEvents:
                guard let tenant else { return 0 }
                // Deliveries go with their event (ON DELETE CASCADE); a pending one keeps it.
                return try c.execute("""
                    DELETE FROM webhook_events WHERE tenant_id = \(tenant) AND id = ANY(ARRAY(
                        SELECT e.id FROM webhook_events e
                        WHERE e.tenant_id = \(tenant) AND e.created_at < \(before)
                          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                                          WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id AND d.state = 'pending')
                        ORDER BY e.created_at LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                    """).affected
            case .expiredAppTokens:
                guard let tenant else { return 0 }
                // A row without a token (never granted, or dropped) counts from its creation.
                return try c.execute("""
                    DELETE FROM app_tokens WHERE tenant_id = \(tenant) AND id = ANY(ARRAY(
                        SELECT id FROM app_tokens
                        WHERE tenant_id = \(tenant) AND coalesce(expires_at, created_at) < \(before)
                          AND coalesce(last_used_at, created_at) < \(before)
                        ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                    """).affected
            }
        }
    }
}
