import BrokerCore
import Foundation

/// WebhookService manages a tenant's webhook endpoints and delivers their events (Standard
/// Webhooks): from the durable outbox, by any replica, at least once, in order per session,
/// with backoff, giving up after `giveUpAfter`. Events are queued by the stores in the
/// transaction that causes them; session.grant_expiring by `queueGrantsExpiring`;
/// client.certificate_expiring by `queueCertificatesExpiring`.
///
/// Thread-safety: a value; calls block (database, receivers): run them on worker threads.
public struct WebhookService: Sendable {
    let store: any WebhookStore
    let registry: RegistryCache
    let sender: any WebhookSender
    let mac: StandardWebhooks.MAC
    let audit: any AuditSink
    let clock: any Clock
    /// Plain http:// endpoints (development and tests); otherwise https:// only.
    let allowHTTP: Bool
    let retry: RetryPolicy
    let giveUpAfter: TimeInterval
    let timeout: TimeInterval
    let events: @Sendable (LogLine) -> Void
    /// Delivery attempts by outcome: delivered, failed (retried), given_up.
    public let outcomes: LabeledCounter<String>
    /// Outbox writes that failed after a delivery attempt (its success or its failure not
    /// recorded): each is logged, and the delivery is claimed again when its lease runs out.
    public let unrecorded = Counter()

    public init(store: any WebhookStore, registry: RegistryCache, sender: any WebhookSender, mac: @escaping StandardWebhooks.MAC,
                audit: any AuditSink, clock: any Clock, allowHTTP: Bool, retry: RetryPolicy = RetryPolicy(base: 1, cap: 600),
                giveUpAfter: TimeInterval = 3 * 86_400, timeout: TimeInterval = 10,
                outcomes: LabeledCounter<String> = LabeledCounter<String>(), events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        (self.store, self.registry, self.sender, self.mac, self.audit, self.clock, self.allowHTTP) =
            (store, registry, sender, mac, audit, clock, allowHTTP)
        (self.retry, self.giveUpAfter, self.timeout, self.outcomes, self.events) = (retry, giveUpAfter, timeout, outcomes, events)
    }

    // MARK: endpoints

    /// A new endpoint and its secret (shown once). No `events`: every type.
    public func create(tenant: String, url: String, events types: [WebhookEventType]?, actor: String) throws -> (WebhookEndpoint, secret: String) {
        let now = clock.now()
        _ = try registry.activeTenant(tenant, now: now)
        try check(url)
        if let types, types.isEmpty { throw BrokerError.badRequest(code: "invalid_request", message: "'events' must name at least one event type") }
        var rng = SystemRandomNumberGenerator()
        let e = WebhookEndpoint(tenant: tenant, id: "whk_" + Identifiers.token(bytes: 9, using: &rng), url: url,
                                events: types.map { Array(Set($0)).sorted { $0.rawValue < $1.rawValue } } ?? WebhookEventType.allCases,
                                createdAt: now, previousValidUntil: nil)
        let secret = StandardWebhooks.newSecret(using: &rng)
        try store.createEndpoint(e, secret: secret)
        audit.record(AuditEvent(at: now, actor: actor, action: .webhookCreate, tenant: tenant, session: nil, outcome: e.id))
        return (e, secret)
    }

    public func list(tenant: String) throws -> [WebhookEndpoint] {
        _ = try registry.activeTenant(tenant, now: clock.now())
        return try store.endpoints(tenant: tenant)
    }

    public func delete(tenant: String, id: String, actor: String) throws {
        let now = clock.now()
        _ = try registry.activeTenant(tenant, now: now)
        guard try store.deleteEndpoint(tenant: tenant, id: id, now: now) else { throw BrokerError.notFound("webhook") }
        audit.record(AuditEvent(at: now, actor: actor, action: .webhookDelete, tenant: tenant, session: nil, outcome: id))
    }

    /// A new secret (shown once); the current one keeps signing for `overlap` seconds, so that
    /// receivers accept either while they move over.
    public func rotate(tenant: String, id: String, overlap: TimeInterval, actor: String) throws -> (WebhookEndpoint, secret: String) {
        let now = clock.now()
        _ = try registry.activeTenant(tenant, now: now)
        guard (0...604_800).contains(overlap) else {
            throw BrokerError.badRequest(code: "invalid_request", message: "'overlap_seconds' must be 0...604800")
        }
        var rng = SystemRandomNumberGenerator()
        let secret = StandardWebhooks.newSecret(using: &rng)
        guard let e = try store.rotateSecret(tenant: tenant, id: id, secret: secret, previousUntil: now.addingTimeInterval(overlap)) else {
            throw BrokerError.notFound("webhook")
        }
        audit.record(AuditEvent(at: now, actor: actor, action: .webhookRotate, tenant: tenant, session: nil, outcome: id))
        return (e, secret)
    }

    public func deliveries(tenant: String, id: String, limit: Int) throws -> [WebhookDeliveryRecord] {
        _ = try registry.activeTenant(tenant, now: clock.now())
        guard try store.endpoints(tenant: tenant).contains(where: { $0.id == id }) else { throw BrokerError.notFound("webhook") }
        return try store.deliveries(tenant: tenant, endpoint: id, limit: limit)
    }

    /// The URL rules of redirect URIs (absolute, no credentials or fragment, https), plain http
    /// to any host only with `allowHTTP`.
    private func check(_ url: String) throws {
        if let p = URLRules.problem(url, what: "'url'", allowHTTP: allowHTTP) { throw BrokerError.badRequest(code: "invalid_request", message: p) }
    }

    // MARK: delivery

    /// Delivers what is due, a few at a time (claimed with a lease long enough for all of them
    /// to time out one after another, so replicas share the work and never send a delivery
    /// concurrently); answers how many were claimed — the loop asks again at once while there are.
    @discardableResult
    public func deliverDue(limit: Int = 5) throws -> Int {
        let due = try store.claimDue(now: clock.now(), lease: Double(limit) * (timeout + 2) + 10, limit: limit)
        for d in due { deliver(d) }
        return due.count
    }

    private func deliver(_ d: WebhookDelivery) {
        let now = clock.now()
        // Too late to finish within the lease (receivers before it were slow): leave it to the
        // next claim rather than race it.
        guard now.addingTimeInterval(timeout) < d.leaseUntil else { return }
        let timestamp = Int(now.timeIntervalSince1970)
        // A signature the cryptography library fails to make leaves the delivery to a later
        // claim, once its lease has run out, like a receiver that did not answer.
        guard let signature = try? StandardWebhooks.signature(id: d.eventID, timestamp: timestamp, body: d.payload, secrets: d.secrets, mac: mac)
        else { return }
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"), ("webhook-id", d.eventID), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature)]
        var status: Int?
        var why: String
        do {
            let s = try sender.post(d.url, headers: headers, body: Array(d.payload.utf8), timeout: timeout)
            status = s
            if (200..<300).contains(s) {
                do {
                    try store.delivered(d, status: s, now: clock.now())
                    outcomes.add("delivered")
                } catch {
                    // Delivered but not recorded: the lease runs out and it is sent again (at least once).
                    unrecorded.add()
                    log(d, .warn, "webhook_unrecorded", "delivered, but recording it failed (\(BrokerError.cause(of: error))); it will be sent again")
                }
                return
            }
            why = "HTTP \(s)"
        } catch {
            why = String(describing: error)
        }
        let givingUp = clock.now().timeIntervalSince(d.createdAt) >= giveUpAfter
        let next = givingUp ? nil : retry.nextAttempt(after: d.attempts + 1, retryAfter: nil, now: clock.now(), draw: Double.random(in: 0.5...1))
        outcomes.add(givingUp ? "given_up" : "failed")
        log(d, givingUp ? .error : .warn, givingUp ? "webhook_given_up" : "webhook_failed",
            givingUp ? "\(d.type.rawValue) to \(d.endpoint) not delivered after \(d.attempts + 1) attempts (\(why)); given up"
                     : "\(d.type.rawValue) to \(d.endpoint) failed (\(why)); tried again in \(Int(next!.timeIntervalSince(clock.now()))) s")
        do { try store.failed(d, status: status, error: why, next: next) } catch {
            // Not written: the lease runs out and the delivery is claimed again, sooner than planned.
            unrecorded.add()
            log(d, .warn, "webhook_unrecorded", "recording the failed attempt failed (\(BrokerError.cause(of: error))); it is claimed again when its lease runs out")
        }
    }

    private func log(_ d: WebhookDelivery, _ level: RefreshEvent.Level, _ code: String, _ message: String) {
        events(LogLine(tenant: d.tenant, client: "", session: nil, event: RefreshEvent(level, code, message)))
    }

    /// Queues session.grant_expiring for grants ending within a day (once each).
    @discardableResult
    public func queueGrantsExpiring(within: TimeInterval = 86_400) throws -> Int {
        let now = clock.now()
        return try store.queueGrantsExpiring(before: now.addingTimeInterval(within), now: now, limit: 500)
    }

    /// Queues client.certificate_expiring for client certificates 30, 7 or 1 days from their
    /// end (once per certificate and threshold).
    @discardableResult
    public func queueCertificatesExpiring() throws -> Int {
        try store.queueCertificatesExpiring(now: clock.now(), limit: 500)
    }
}
