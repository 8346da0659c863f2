import BrokerCore
import Foundation

/// PostgresWebhookStore: endpoints with sealed secrets (bound to webhooks/<tenant>/<id>/secret
/// and …/previous_secret), and the delivery outbox of migration 013, shared by every replica.
public final class PostgresWebhookStore: WebhookStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    static func context(_ tenant: String, _ id: String, _ column: String) -> String { "webhooks/\(tenant)/\(id)/\(column)" }

    public func createEndpoint(_ e: WebhookEndpoint, secret: String) throws {
        try pool.run { c in
            try c.execute("""
                INSERT INTO webhook_endpoints (tenant_id, id, url, events, secret, created_at)
                VALUES (\(e.tenant), \(e.id), \(e.url), \(e.events.map(\.rawValue)),
                        \(sealer.seal(secret, context: Self.context(e.tenant, e.id, "secret"))), \(e.createdAt))
                """)
        }
    }

    private static let columns = """
        id, url, array_to_string(events, ' ') AS events, extract(epoch FROM created_at) AS created_at, \
        extract(epoch FROM previous_until) AS previous_until
        """

    /// Reads the columns of `columns`, by name. An event type this release does not know refuses
    /// the endpoint rather than dropping the type from it.
    private func endpoint(_ r: PGRow, tenant: String) throws -> WebhookEndpoint {
        try WebhookEndpoint(tenant: tenant, id: r["id"], url: r["url"], events: r.knownWords("events", table: "webhook_endpoints"),
                            createdAt: r["created_at"], previousValidUntil: r["previous_until"])
    }

    public func endpoints(tenant: String) throws -> [WebhookEndpoint] {
        try pool.run { c in
            try c.execute("SELECT \(raw: Self.columns) FROM webhook_endpoints WHERE tenant_id = \(tenant) AND deleted_at IS NULL ORDER BY id")
                .map { try endpoint($0, tenant: tenant) }
        }
    }

    public func deleteEndpoint(tenant: String, id: String, now: Date) throws -> Bool {
        try pool.transact { c in
            guard try c.execute("SELECT 1 FROM webhook_endpoints WHERE tenant_id = \(tenant) AND id = \(id) FOR UPDATE").count == 1 else { return false }
            try c.execute("UPDATE webhook_endpoints SET deleted_at = coalesce(deleted_at, \(now)) WHERE tenant_id = \(tenant) AND id = \(id)")
            // What was still to deliver there never will be.
            try c.execute("""
                UPDATE webhook_deliveries SET state = 'failed', last_error = 'endpoint deleted'
                WHERE tenant_id = \(tenant) AND endpoint_id = \(id) AND state = 'pending'
                """)
            return true
        }
    }

    public func rotateSecret(tenant: String, id: String, secret: String, previousUntil: Date) throws -> WebhookEndpoint? {
        try pool.transact { c in
            guard let old = try c.execute("""
                SELECT secret FROM webhook_endpoints WHERE tenant_id = \(tenant) AND id = \(id) AND deleted_at IS NULL FOR UPDATE
                """).first({ try $0.bytes("secret") }), let sealed = old else { return nil }
            let current = try open(sealed, tenant, id, "secret")
            return try c.execute("""
                UPDATE webhook_endpoints SET secret = \(sealer.seal(secret, context: Self.context(tenant, id, "secret"))),
                    previous_secret = \(sealer.seal(current, context: Self.context(tenant, id, "previous_secret"))), previous_until = \(previousUntil)
                WHERE tenant_id = \(tenant) AND id = \(id)
                RETURNING \(raw: Self.columns)
                """).first { try endpoint($0, tenant: tenant) }
        }
    }

    /// The one outbox query not scoped to a tenant: every replica delivers for all of them.
    /// Only events of a type this release knows are claimed: one a newer release queued waits for
    /// a replica of that release (during a rolling upgrade) rather than failing this replica's
    /// batch and spending its attempts.
    public func claimDue(now: Date, lease: TimeInterval, limit: Int) throws -> [WebhookDelivery] {
        try pool.run { c in
            try c.execute("""
                WITH due AS (
                    SELECT d.tenant_id, d.endpoint_id, d.event_id FROM webhook_deliveries d
                    WHERE d.state = 'pending' AND d.next_attempt_at <= \(now)
                      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                                      WHERE p.tenant_id = d.tenant_id AND p.endpoint_id = d.endpoint_id AND p.ordering_key = d.ordering_key
                                        AND p.state = 'pending' AND p.seq < d.seq)
                      AND EXISTS (SELECT 1 FROM webhook_events k WHERE k.tenant_id = d.tenant_id AND k.id = d.event_id
                                    AND k.type = ANY(\(WebhookEventType.allCases.map(\.rawValue))))
                    ORDER BY d.next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED),
                claimed AS (
                    UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = \(now.addingTimeInterval(lease))
                    FROM due WHERE d.tenant_id = due.tenant_id AND d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
                    RETURNING d.tenant_id, d.endpoint_id, d.event_id, d.attempts - 1 AS attempts, d.seq)
                SELECT cl.tenant_id, cl.endpoint_id, cl.event_id, e.type, w.url, e.payload, w.secret,
                       CASE WHEN w.previous_until > \(now) THEN w.previous_secret END AS previous_secret, cl.attempts,
                       extract(epoch FROM e.created_at) AS created_at
                FROM claimed cl
                JOIN webhook_events e ON e.tenant_id = cl.tenant_id AND e.id = cl.event_id
                JOIN webhook_endpoints w ON w.tenant_id = cl.tenant_id AND w.id = cl.endpoint_id
                ORDER BY cl.seq
                """, plan: .generic).map { r in
                let tenant: String = try r["tenant_id"], endpoint: String = try r["endpoint_id"]
                var secrets = [try open(r.bytes("secret"), tenant, endpoint, "secret")]
                if let previous = try r.bytes("previous_secret") { secrets.append(try open(previous, tenant, endpoint, "previous_secret")) }
                return try WebhookDelivery(tenant: tenant, endpoint: endpoint, eventID: r["event_id"],
                                           type: r.known("type", table: "webhook_events"), url: r["url"], payload: r["payload"],
                                           secrets: secrets, attempts: r["attempts"], createdAt: r["created_at"],
                                           leaseUntil: now.addingTimeInterval(lease))
            }
        }
    }

    public func delivered(_ d: WebhookDelivery, status: Int, now: Date) throws {
        try pool.run { c in
            try c.execute("""
                UPDATE webhook_deliveries SET state = 'delivered', delivered_at = \(now), last_status = \(status), last_error = NULL
                WHERE tenant_id = \(d.tenant) AND endpoint_id = \(d.endpoint) AND event_id = \(d.eventID)
                  AND state = 'pending' AND attempts = \(d.attempts + 1)
                """, plan: .keyed)
        }
    }

    public func failed(_ d: WebhookDelivery, status: Int?, error: String, next: Date?) throws {
        try pool.run { c in
            try c.execute("""
                UPDATE webhook_deliveries SET last_status = \(status), last_error = \(String(error.prefix(300))),
                    state = \(next == nil ? "failed" : "pending"), next_attempt_at = coalesce(\(next), next_attempt_at)
                WHERE tenant_id = \(d.tenant) AND endpoint_id = \(d.endpoint) AND event_id = \(d.eventID) AND state = 'pending'
                  AND attempts = \(d.attempts + 1)
                """, plan: .keyed)
        }
    }

    public func deliveries(tenant: String, endpoint: String, limit: Int) throws -> [WebhookDeliveryRecord] {
        try pool.run { c in
            try c.execute("""
                SELECT d.event_id, e.type, d.ordering_key, d.state, d.attempts, d.last_status, d.last_error,
                       extract(epoch FROM d.created_at) AS created_at, extract(epoch FROM d.delivered_at) AS delivered_at,
                       CASE WHEN d.state = 'pending' THEN extract(epoch FROM d.next_attempt_at) END AS next_attempt_at
                FROM webhook_deliveries d JOIN webhook_events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
                WHERE d.tenant_id = \(tenant) AND d.endpoint_id = \(endpoint)
                ORDER BY d.seq DESC LIMIT \(limit)
                """).map { r in
                try WebhookDeliveryRecord(eventID: r["event_id"], type: r.known("type", table: "webhook_events"),
                                          orderingKey: r["ordering_key"], state: r.known("state", table: "webhook_deliveries"),
                                          attempts: r["attempts"], lastStatus: r["last_status"], lastError: r["last_error"],
                                          createdAt: r["created_at"], deliveredAt: r["delivered_at"], nextAttemptAt: r["next_attempt_at"])
            }
        }
    }

    public func queueGrantsExpiring(before: Date, now: Date, limit: Int) throws -> Int {
        let iso = ISO8601DateFormatter()
        return try pool.transact { c in
            let marked = try c.execute("""
                WITH due AS (
                    SELECT s.tenant_id, s.id FROM sessions s
                    WHERE s.state = 'active' AND s.grant_expiry_notified_at IS NULL AND s.grant_expires_at < \(before)
                      AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.tenant_id = s.tenant_id AND w.deleted_at IS NULL
                                    AND 'session.grant_expiring' = ANY(w.events))
                    ORDER BY s.grant_expires_at LIMIT \(limit) FOR UPDATE OF s SKIP LOCKED)
                UPDATE sessions s SET grant_expiry_notified_at = \(now) FROM due
                WHERE s.tenant_id = due.tenant_id AND s.id = due.id
                RETURNING s.tenant_id, s.id, s.client_id, s.subject, extract(epoch FROM s.grant_expires_at) AS grant_expires_at
                """, plan: .generic).map { r -> (String, WebhookEvent) in
                let tenant: String = try r["tenant_id"], id: String = try r["id"], client: String = try r["client_id"]
                let subject: String = try r["subject"], ends: Date = try r["grant_expires_at"]
                return (tenant, WebhookEvent(type: .grantExpiring, orderingKey: id, data: [
                    "tenant": tenant, "session_id": id, "client": client, "subject": subject, "state": "active",
                    "grant_expires_at": iso.string(from: ends)]))
            }
            for (tenant, events) in Dictionary(grouping: marked, by: \.0) {
                if let q = WebhookOutbox.enqueue(tenant: tenant, events.map(\.1), now: now) { try c.execute(q) }
            }
            return marked.count
        }
    }

    public func queueCertificatesExpiring(now: Date, limit: Int) throws -> Int {
        let iso = ISO8601DateFormatter()
        return try pool.transact { c in
            // Locked (SKIP LOCKED): a replica running the same pass skips these rows, and finds
            // them told once it may read them.
            let candidates = try c.execute("""
                SELECT c.tenant_id, c.id, c.tls_client_certificate_sha256, c.tls_client_certificate_subject,
                       extract(epoch FROM c.tls_client_certificate_not_after) AS not_after, c.tls_client_certificate_notified_days
                FROM clients c
                WHERE c.tls_client_certificate_not_after < \(now.addingTimeInterval(CertificateExpiryNotice.horizon))
                  AND coalesce(c.tls_client_certificate_notified_days, 2147483647) > \(CertificateExpiryNotice.thresholds.last ?? 1)
                  AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.tenant_id = c.tenant_id AND w.deleted_at IS NULL
                                AND 'client.certificate_expiring' = ANY(w.events))
                ORDER BY c.tls_client_certificate_not_after LIMIT \(limit) FOR UPDATE OF c SKIP LOCKED
                """, plan: .generic).map { r in
                (tenant: try r["tenant_id"] as String, id: try r["id"] as String, sha: try r["tls_client_certificate_sha256"] as String,
                 subject: try r["tls_client_certificate_subject"] as String?, notAfter: try r["not_after"] as Date,
                 told: try r["tls_client_certificate_notified_days"] as Int?)
            }
            var queued: [(String, WebhookEvent)] = []
            for k in candidates {
                guard let days = CertificateExpiryNotice.due(notAfter: k.notAfter, told: k.told, now: now) else { continue }
                try c.execute("""
                    UPDATE clients SET tls_client_certificate_notified_days = \(days)
                    WHERE tenant_id = \(k.tenant) AND id = \(k.id) AND tls_client_certificate_sha256 = \(k.sha)
                    """)
                queued.append((k.tenant, WebhookEvent(type: .certificateExpiring, orderingKey: "client/" + k.id, data: [
                    "tenant": k.tenant, "client": k.id, "x5t#S256": k.sha, "subject": k.subject ?? "",
                    "not_after": iso.string(from: k.notAfter), "days": String(days)])))
            }
            for (tenant, events) in Dictionary(grouping: queued, by: \.0) {
                if let q = WebhookOutbox.enqueue(tenant: tenant, events.map(\.1), now: now) { try c.execute(q) }
            }
            return queued.count
        }
    }

    private func open(_ sealed: [UInt8]?, _ tenant: String, _ id: String, _ column: String) throws -> String {
        guard let sealed else { throw BrokerError.internalError }
        do { return try sealer.open(sealed, context: Self.context(tenant, id, column)) } catch let e as SealError { throw e.brokerError }
    }
}
