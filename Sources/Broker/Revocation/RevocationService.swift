import BrokerCore
import Foundation
import Synchronization

/// RevocationService ends sessions so that they are dead at the IdP, not just here:
/// the store marks the session revoked, erases its tokens and queues them in a durable outbox in
/// one transaction (so from its COMMIT no replica hands out a token of the session); then the
/// tokens are revoked at the IdP (RFC 7009, with the client's authentication) — at once when it
/// answers, otherwise by `deliverDue`, which every replica runs, until it does. An issuer that
/// offers no revocation (no `revocation_endpoint`) settles its entries at once as unsupported:
/// nothing is left waiting for an endpoint that does not exist, and the answer, the audit and
/// the log say so.
///
/// Thread-safety: a value; calls block (database, IdP): run them on worker threads.
public struct RevocationService: Sendable {
    let store: any RevocationStore
    let registry: RegistryCache
    let endpoint: any TokenEndpoint
    let tokens: TokenService
    let audit: any AuditSink
    let clock: any Clock
    let lockTimeout: TimeInterval
    let retry: RetryPolicy
    /// One line per revocation the IdP did not confirm (the outbox tries it again).
    let events: @Sendable (LogLine) -> Void
    /// Outbox writes that failed after a call to the IdP (a confirmation or a failure not
    /// recorded): each is logged, and the entry is revoked again when its lease runs out.
    public let unrecorded = Counter()

    public init(store: any RevocationStore, registry: RegistryCache, endpoint: any TokenEndpoint, tokens: TokenService,
                audit: any AuditSink, clock: any Clock, lockTimeout: TimeInterval, retry: RetryPolicy = RetryPolicy(base: 2, cap: 600),
                events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.store = store
        self.registry = registry
        self.endpoint = endpoint
        self.tokens = tokens
        self.audit = audit
        self.clock = clock
        self.lockTimeout = lockTimeout
        self.retry = retry
        self.events = events
    }

    public struct Outcome: Sendable {
        /// The session as it was before (its tokens in memory only; callers render metadata).
        public let before: Session
        /// The session now: revoked, no token material.
        public let after: Session
        /// False when this call found the session already revoked (idempotent repeat).
        public let revokedNow: Bool
        /// Revocations the IdP has not confirmed yet (0: dead at the IdP, or `unsupportedAtIdP`).
        public let pendingAtIdP: Int
        /// The issuer offers no revocation: the grant is erased here and lives at the IdP until
        /// it expires (`idp_revocation: unsupported`).
        public var unsupportedAtIdP = false
        /// Asked to end the user's session at the IdP: `redirect_required` (send the browser to
        /// `endSessionURL`; the broker cannot tell whether the user was logged out there) or
        /// `unsupported` (the issuer advertises no end_session_endpoint); nil when not asked.
        public var idpLogout: String? = nil
        public var endSessionURL: String? = nil
        /// The `state` in `endSessionURL`, which the IdP sends back to the post-logout redirect.
        public var endSessionState: String? = nil
    }

    /// Revokes the session; with `endSession`, also answers the RP-Initiated Logout URL for the
    /// user's browser (it revokes nothing by itself: the revocation above does). A repeat of an
    /// already revoked session has no ID token left to hint with: the URL then carries client_id only.
    public func revoke(tenant: String, id: String, actor: String, endSession: Bool = false, postLogoutRedirect: String? = nil) throws -> Outcome {
        let now = clock.now()
        let (before, after, queued) = try store.revoke(tenant: tenant, id: id, timeout: lockTimeout, now: now)
        // The revoked version goes into this replica's cache rather than leaving a hole: a
        // refresh that finished just before cannot put its older version back.
        tokens.cache.put(after, now: now)
        let revokedNow = before.state != .revoked
        let settled = settle(queued.compactMap(call))
        var pending = queued.count - settled.count
        var unsupported = settled.contains { $0.answer == .unsupported }
        if !revokedNow {
            pending = try store.pendingRevocations(tenant: tenant, session: id)
            // A repeat answers the same document: nothing pending may mean nothing possible.
            if pending == 0, let client = try registry.client(tenant: tenant, id: before.client, now: now) {
                unsupported = (try? endpoint.revocationSupported(client: client)) == false
            }
        }
        let outcome = !revokedNow ? "already_revoked" : Self.outcome(pending: pending > 0, unsupported: unsupported)
        audit.record(AuditEvent(at: now, actor: actor, action: .sessionRevoke, tenant: tenant, session: id, outcome: outcome))
        var o = Outcome(before: before, after: after, revokedNow: revokedNow, pendingAtIdP: pending)
        o.unsupportedAtIdP = unsupported
        if endSession {
            guard let client = try registry.client(tenant: tenant, id: before.client, now: now) else { throw BrokerError.notFound("client") }
            var rng = SystemRandomNumberGenerator()
            let state = Identifiers.token(bytes: 16, using: &rng)
            let url: String?
            do { url = try endpoint.endSessionURL(client: client, idTokenHint: before.idToken, postLogoutRedirectURI: postLogoutRedirect, state: state) } catch {
                throw error.callerError
            }
            (o.idpLogout, o.endSessionURL, o.endSessionState) = url.map { ("redirect_required", $0, state) } ?? ("unsupported", nil, nil)
            audit.record(AuditEvent(at: now, actor: actor, action: .sessionEndSession, tenant: tenant, session: id, outcome: o.idpLogout!))
        }
        return o
    }

    /// The bulk form of `revoke`, for sign-out jobs: the tenant's sessions revoked here in one
    /// transaction, then their tokens sent to the IdP `lanes` sessions at a time, `pace(client)`
    /// called before each session's calls (a rate limit). Sessions the bulk transaction left
    /// alone (a refresh holds the lock, the database failed) are revoked one by one, waiting
    /// as `revoke` does. Returns the ids revoked here (whatever the IdP said: unconfirmed
    /// tokens stay in the outbox); the others could not be revoked.
    public func revokeMany(tenant: String, sessions: [(id: String, client: String)], actor: String, lanes: Int,
                           pace: @escaping @Sendable (_ client: String) -> Void) -> Set<String> {
        let now = clock.now()
        let ids = sessions.map(\.id)
        let clients = Dictionary(sessions.map { ($0.id, $0.client) }, uniquingKeysWith: { a, _ in a })
        // The bulk statement failing leaves every session to the one-by-one path, which reports its own failures.
        let (revoked, left) = (try? store.revokeMany(tenant: tenant, ids: ids, now: now)) ?? ([], ids)
        for r in revoked { tokens.cache.put(r.after, now: now) }
        let fresh = revoked.filter { $0.before.state != .revoked }
        let confirmed = Mutex<[Settled]>([])
        Lanes.run(fresh.count, width: lanes) { [self] i in
            pace(fresh[i].before.client)
            let ok = fresh[i].queued.compactMap(call)
            confirmed.withLock { $0 += ok }
        }
        let forgotten = Dictionary(settle(confirmed.withLock { $0 }).map { ($0.entry.id, $0.answer) }, uniquingKeysWith: { a, _ in a })
        for r in revoked {
            let outcome = r.before.state == .revoked ? "already_revoked"
                : Self.outcome(pending: !r.queued.allSatisfy { forgotten[$0.id] != nil },
                               unsupported: r.queued.contains { forgotten[$0.id] == .unsupported })
            audit.record(AuditEvent(at: now, actor: actor, action: .sessionRevoke, tenant: tenant, session: r.before.id, outcome: outcome))
        }
        let alone = Mutex(Set<String>())
        Lanes.run(left.count, width: lanes) { [self] i in
            if let client = clients[left[i]] { pace(client) }
            // A session not revoked here is not in the answer: the job records it as failed.
            if (try? revoke(tenant: tenant, id: left[i], actor: actor)) != nil { alone.withLock { _ = $0.insert(left[i]) } }
        }
        return Set(revoked.map(\.before.id)).union(alone.withLock { $0 })
    }

    /// The audit outcome of a session's revocation here, by what the IdP made of its tokens.
    static func outcome(pending: Bool, unsupported: Bool) -> String {
        pending ? "idp_pending" : unsupported ? "idp_unsupported" : "ok"
    }

    /// Delivers revocations that are due (claimed with a lease, so replicas share the work);
    /// returns how many the IdP settled (confirmed, or found it offers no revocation). A claim
    /// that fails is thrown (the loop's OutageLog reports it).
    @discardableResult
    public func deliverDue(limit: Int = 100) throws -> Int {
        let due = try store.claimDueRevocations(now: clock.now(), lease: 60, limit: limit)
        // The RFC 7009 calls, one per entry; failures are written back to the outbox one by one,
        // settled entries removed together.
        return settle(due.compactMap(call)).count
    }

    /// An outbox entry the IdP settled, and how.
    struct Settled: Sendable {
        let entry: PendingRevocation
        let answer: IdPRevocation
    }

    /// Removes settled entries from the outbox (one statement per tenant) and audits each
    /// confirmed one; returns those removed (an entry whose removal failed is sent again later:
    /// revoking a revoked token changes nothing, RFC 7009 §2.2).
    private func settle(_ settled: [Settled]) -> [Settled] {
        let now = clock.now()
        var forgotten: [Settled] = []
        for (tenant, done) in Dictionary(grouping: settled, by: \.entry.tenant) {
            do { try store.revocationsDelivered(tenant: tenant, ids: done.map(\.entry.id)) } catch {
                // Not forgotten: revoked again when due, which changes nothing at the IdP (RFC 7009 §2.2).
                unrecorded.add(done.count)
                events(LogLine(tenant: tenant, client: "", session: nil, event: RefreshEvent(.warn, "revocation_unrecorded",
                    "the IdP confirmed \(done.count) revocation(s), but removing them from the outbox failed (\(BrokerError.cause(of: error))); they are sent again when due")))
                continue
            }
            forgotten += done
            for s in done where s.answer == .revoked {
                let p = s.entry
                audit.record(AuditEvent(at: now, actor: "broker", action: .sessionRevokeAtIdP, tenant: p.tenant, session: p.session, outcome: p.hint))
            }
        }
        return forgotten
    }

    /// One RFC 7009 call. The entry settled when the IdP confirmed or offers no revocation;
    /// otherwise nil, and the entry's next attempt is written.
    private func call(_ p: PendingRevocation) -> Settled? {
        let now = clock.now()
        do {
            guard let client = try registry.client(tenant: p.tenant, id: p.client, now: now) else {
                try store.revocationFailed(tenant: p.tenant, id: p.id, next: retry.nextAttempt(after: p.attempts + 1, retryAfter: nil, now: now, draw: 1),
                                           reason: "client not found")
                return nil
            }
            let answer = try endpoint.revoke(client: client, token: p.token, hint: p.hint)
            if answer == .unsupported {
                events(LogLine(tenant: p.tenant, client: p.client, session: p.session, event: RefreshEvent(.warn, "revocation_unsupported",
                    "the issuer offers no token revocation (no revocation_endpoint in its metadata, RFC 7009): the session's \(p.hint) is erased here and stays valid at the IdP until it expires; nothing is queued")))
            }
            return Settled(entry: p, answer: answer)
        } catch {
            var retryAfter: Int?
            var reason = "store unavailable"
            if let e = error as? TokenEndpointError {
                reason = e.reason
                if case .transient(_, let after) = e { retryAfter = after }
            }
            let next = retry.nextAttempt(after: p.attempts + 1, retryAfter: retryAfter, now: now, draw: Double.random(in: 0.5...1))
            events(LogLine(tenant: p.tenant, client: p.client, session: p.session, event: RefreshEvent(
                .warn, "revocation_unconfirmed", "the IdP did not confirm revoking the session's \(p.hint) (\(reason)); tried again in \(Int(next.timeIntervalSince(now))) s")))
            do { try store.revocationFailed(tenant: p.tenant, id: p.id, next: next, reason: reason) } catch {
                // Not written: the lease runs out and the entry is claimed again, sooner than planned.
                unrecorded.add()
                events(LogLine(tenant: p.tenant, client: p.client, session: p.session, event: RefreshEvent(.warn, "revocation_unrecorded",
                    "recording the unconfirmed revocation failed (\(BrokerError.cause(of: error))); it is claimed again when its lease runs out")))
            }
            return nil
        }
    }
}
