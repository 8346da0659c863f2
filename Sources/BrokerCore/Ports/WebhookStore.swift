import Foundation

/// WebhookStore keeps a tenant's endpoints (secrets sealed) and the durable outbox of their
/// deliveries. Events caused by a session's or a job's change are written by those stores in
/// the same transaction (WebhookEventType.of); the grant-expiry scan is written here. Thread-safe.
public protocol WebhookStore: Sendable {
    func createEndpoint(_ e: WebhookEndpoint, secret: String) throws
    func endpoints(tenant: String) throws -> [WebhookEndpoint]
    /// False when the tenant has no such endpoint (deleted ones included).
    @discardableResult
    func deleteEndpoint(tenant: String, id: String, now: Date) throws -> Bool
    /// A new secret; the current one keeps signing until `previousUntil`. Nil: no such endpoint.
    func rotateSecret(tenant: String, id: String, secret: String, previousUntil: Date) throws -> WebhookEndpoint?

    /// Claims up to `limit` due deliveries across every tenant, each the earliest still pending
    /// of its endpoint and ordering key (no other replica gets them until `lease` has passed),
    /// counting the attempt.
    func claimDue(now: Date, lease: TimeInterval, limit: Int) throws -> [WebhookDelivery]
    /// The claimed attempt was delivered. A claim taken again since (the lease ran out) wins:
    /// then this changes nothing.
    func delivered(_ d: WebhookDelivery, status: Int, now: Date) throws
    /// The attempt failed: again at `next`, or never (`next` nil: given up, state failed). Like
    /// `delivered`, only while `d` is the latest claim.
    func failed(_ d: WebhookDelivery, status: Int?, error: String, next: Date?) throws
    /// The endpoint's latest deliveries, newest first.
    func deliveries(tenant: String, endpoint: String, limit: Int) throws -> [WebhookDeliveryRecord]

    /// Queues `session.grant_expiring` for active sessions whose grant ends before `before` and
    /// that were not told yet, in tenants with an endpoint subscribed; answers how many.
    func queueGrantsExpiring(before: Date, now: Date, limit: Int) throws -> Int

    /// Queues `client.certificate_expiring` for client certificates whose threshold
    /// (CertificateExpiryNotice) is due and not told yet, in tenants with an endpoint
    /// subscribed, marking each told in the same transaction (so once, whichever replica runs
    /// it); answers how many.
    func queueCertificatesExpiring(now: Date, limit: Int) throws -> Int
}
