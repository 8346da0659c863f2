import BrokerCore
import Foundation

/// AppTokenService hands out app tokens (the client-credentials grant, RFC 6749 §4.4): the
/// stored token when it lives min_ttl, else one new grant shared by every caller — in this
/// process through a BlockingSingleFlight per tenant, client and ask, across replicas through
/// the store's grant lock, under which the row is re-read so that a replica finding a token
/// another wrote uses it. A disabled or deleted client gets none; an IdP that refuses the client
/// (invalid_client, unauthorized_client, 401) drops every stored token of it.
///
/// Tokens in use are renewed ahead of expiry (`renewDue`, a background pass): a hand-out of the
/// stored token marks it used (in memory, written by `flushUses`), and a token used since its
/// grant is granted again once past its renewal instant, so that its askers never wait for
/// the IdP. A token nobody asks for is left to expire (retention deletes it later).
///
/// Every hand-out, refusal and grant is audited (`app_token.issue`, `app_token.grant`, with
/// the client; the sink coalesces identical events) and counted.
///
/// Calls block: run them on worker threads (routes use the executor).
public final class AppTokenService: Sendable {
    let store: any AppTokenStore
    let registry: RegistryCache
    let endpoint: any TokenEndpoint
    let dpopKeys: DPoPKeys?
    let audit: any AuditSink
    let clock: any Clock
    let lockTimeout: TimeInterval
    private let flights = BlockingSingleFlight<String, Granted, BrokerError>()
    /// Hand-outs of stored tokens since the last flush, the latest per token.
    let usage = UsageRecorder<AppTokenKey>()
    /// Hand-outs by source: `stored`, or `granted` (the caller waited for a grant).
    public let handOuts = LabeledCounter<String>()
    /// Client-credentials grants at the IdP, by outcome: `granted` or the error's code.
    public let grants = LabeledCounter<String>()
    /// Background renewals, by outcome: `renewed`, `skipped` (another renewed it first), or the error's code.
    public let renewals = LabeledCounter<String>()

    public init(store: any AppTokenStore, registry: RegistryCache, endpoint: any TokenEndpoint, dpopKeys: DPoPKeys?, audit: any AuditSink,
                clock: any Clock, lockTimeout: TimeInterval = 10) {
        self.store = store
        self.registry = registry
        self.endpoint = endpoint
        self.dpopKeys = dpopKeys
        self.audit = audit
        self.clock = clock
        self.lockTimeout = lockTimeout
    }

    /// The client's app token for `ask`, living at least `minTTL` (nil: the client's policy's
    /// default, as for sessions), with a DPoP proof for each of `dpop` (RFC 9449 §7; a bearer
    /// token is 409 `not_dpop_bound`). `actor` is who asks, for the audit trail.
    /// `presentedByBroker`: the broker itself presents the token (the outbound proxy), with the
    /// client's certificate: a token bound to it (RFC 8705 §3) is no refusal, and one bound to a
    /// replaced certificate is renewed first (BoundTokenRule).
    public func token(tenant: String, client: String, ask: AppTokenAsk, minTTL: TimeInterval?, dpop: [DPoPTarget] = [],
                      presentedByBroker: Bool = false, actor: String = "engine") throws(BrokerError) -> IssuedAppToken {
        let r: Result<IssuedAppToken, BrokerError> = Result { () throws(BrokerError) in
            try guarding {
                let now = clock.now()
                let reg = try servedClient(tenant: tenant, client: client, now: now)
                let rule = BoundTokenRule.of(presents: presentedByBroker, handOutAllowed: reg.handOutCertificateBound,
                                             current: reg.tlsClientCertificate?.thumbprint)
                // Only a client presenting a certificate gets tokens bound to one: others' are not read.
                func bound(_ t: AppToken) -> String? {
                    guard reg.authMethod.needsCertificate, let at = t.accessToken else { return nil }
                    return CertificateBinding.thumbprint(ofAccessToken: at)
                }
                let stored = try store.appToken(tenant: tenant, client: client, ask: ask)
                switch AppTokenDecision.decide(stored, minTTL: need(minTTL, reg, stored), now: now) {
                case .serve:
                    guard try rule.appToken(bound: bound(stored!), tenant: tenant, client: client).get() else {
                        return try issue(stored!, granted: false, dpop: dpop)
                    }
                    // Bound to a replaced certificate: granted anew with the current one, once
                    // for every caller that saw this version.
                    let fresh = try grant(reg, ask: ask, minTTL: minTTL, ifStill: stored!.version, actor: actor).token
                    return try issue(fresh, granted: true, minTTL: need(minTTL, reg, fresh), dpop: dpop)
                case .reject(let e): throw e
                case .grant:
                    let fresh = try grant(reg, ask: ask, minTTL: minTTL, ifStill: nil, actor: actor).token
                    _ = try rule.appToken(bound: bound(fresh), tenant: tenant, client: client).get()
                    return try issue(fresh, granted: true, minTTL: need(minTTL, reg, fresh), dpop: dpop)
                }
            }
        }
        return try finish(r, tenant: tenant, client: client, ask: ask, actor: actor).get()
    }

    /// A forced renewal: a new grant unless the stored token moved past `version` (the one the
    /// caller saw refused upstream) — then the stored one. Concurrent callers naming the same
    /// version make one grant, across replicas.
    public func renew(tenant: String, client: String, ask: AppTokenAsk, ifStill version: Int64, actor: String = "engine") throws(BrokerError) -> IssuedAppToken {
        let r: Result<IssuedAppToken, BrokerError> = Result { () throws(BrokerError) in
            try guarding {
                let reg = try servedClient(tenant: tenant, client: client, now: clock.now())
                let fresh = try grant(reg, ask: ask, minTTL: nil, ifStill: version, actor: actor).token
                return try issue(fresh, granted: true, minTTL: need(nil, reg, fresh), dpop: [])
            }
        }
        return try finish(r, tenant: tenant, client: client, ask: ask, actor: actor).get()
    }

    /// One background renewal pass: every token used since its grant whose renewal instant
    /// comes before the next pass, `ahead` seconds from now (AppTokenDecision.renewalDue, read
    /// again before granting), is granted again — once across replicas, through the grant lock
    /// and the version it was read at. A failure is counted and left for the next pass.
    /// Answers how many it renewed.
    @discardableResult
    public func renewDue(ahead: TimeInterval, limit: Int = 500) throws -> Int {
        let cut = clock.now().addingTimeInterval(ahead)
        var renewed = 0
        for due in try store.dueForRenewal(before: cut, limit: limit) {
            let outcome: String
            do throws(BrokerError) {
                outcome = try renewIfDue(due, at: cut) ? "renewed" : "skipped"
            } catch {
                outcome = error.code
            }
            renewals.add(outcome)
            if outcome == "renewed" { renewed += 1 }
        }
        return renewed
    }

    /// Grants `due` again when the stored row is still due at `at`, at the version read.
    private func renewIfDue(_ due: AppTokenUse, at: Date) throws(BrokerError) -> Bool {
        try guarding {
            guard let row = try store.appToken(tenant: due.tenant, client: due.client, ask: due.ask),
                  AppTokenDecision.renewalDue(row, now: at) else { return false }
            let reg = try servedClient(tenant: due.tenant, client: due.client, now: clock.now())
            return try grant(reg, ask: due.ask, minTTL: 0, ifStill: row.version, actor: "engine").granted
        }
    }

    /// Writes the hand-outs recorded since the last call (last_used_at), in one bulk write.
    @discardableResult
    public func flushUses() throws -> Int {
        let uses = usage.drainLatest().map { AppTokenUse(tenant: $0.key.tenant, client: $0.key.client, ask: $0.key.ask, at: $0.value) }
        try store.touch(uses)
        return uses.count
    }

    /// The life an ask needs: its `minTTL`, else the client's policy's default for the token's
    /// lifetime (as for a session; before any grant the lifetime is unknown and the policy's
    /// `minTTL` stands).
    private func need(_ minTTL: TimeInterval?, _ reg: ClientRegistration, _ t: AppToken?) -> TimeInterval {
        minTTL ?? reg.refreshPolicy.defaultMinTTL(lifetime: t?.lifetime)
    }

    /// The client when it may have an app token: its tenant enabled, it registered and enabled.
    func servedClient(tenant: String, client: String, now: Date) throws -> ClientRegistration {
        _ = try registry.activeTenant(tenant, now: now)
        guard let reg = try registry.client(tenant: tenant, id: client, now: now) else { throw BrokerError.notFound("client") }
        guard !reg.disabled else { throw BrokerError.conflict(code: "client_disabled", message: "the client is disabled: it gets no app token") }
        return reg
    }

    /// A token after the grant lock: `granted` when this call's grant wrote it.
    struct Granted: Sendable {
        let token: AppToken
        let granted: Bool
    }

    /// One grant for every concurrent caller of this process, under the cross-replica lock.
    private func grant(_ reg: ClientRegistration, ask: AppTokenAsk, minTTL: TimeInterval?, ifStill: Int64?, actor: String) throws -> Granted {
        let key = reg.tenant + "\n" + AppToken.id(client: reg.id, ask: ask) + "\n" + (ifStill.map(String.init) ?? "")
        return try flights.run(key) { () throws(BrokerError) in
            try guarding { try locked(reg, ask: ask, minTTL: minTTL, ifStill: ifStill, actor: actor) }
        }
    }

    private enum Locked { case token(AppToken, granted: Bool), refused }

    private func locked(_ reg: ClientRegistration, ask: AppTokenAsk, minTTL: TimeInterval?, ifStill: Int64?, actor: String) throws -> Granted {
        let outcome = try store.withGrantLock(tenant: reg.tenant, client: reg.id, ask: ask, timeout: lockTimeout) { row -> (write: AppToken?, result: Locked) in
            switch AppTokenDecision.decideLocked(row, minTTL: need(minTTL, reg, row), ifStill: ifStill, now: clock.now()) {
            case .serve: return (nil, .token(row!, granted: false))
            case .reject(let e): throw e
            case .grant: break
            }
            var base = row ?? AppToken(tenant: reg.tenant, client: reg.id, ask: ask, createdAt: clock.now())
            if let alg = reg.dpopAlgorithm, base.dpopKey == nil {
                guard let keys = dpopKeys else { throw BrokerError.internalError }
                base.dpopKey = try keys.make(alg)
            }
            let prover = try base.dpopKey.map { k throws in
                guard let p = dpopKeys?.prover(k) else { throw BrokerError.internalError }
                return p
            }
            let sentAt = clock.now()
            do throws(TokenEndpointError) {
                let g = try endpoint.clientCredentials(client: reg, ask: ask, dpop: prover)
                var fresh = base.granted(g, sentAt: sentAt, lifetime: reg.descriptor.grant, policy: reg.refreshPolicy)
                fresh.version = (row?.version ?? 0) + 1
                recordGrant(reg, "granted", actor: actor)
                return (fresh, .token(fresh, granted: true))
            } catch {
                let refusal: BrokerError
                switch RefreshFailure.classify(error, reg.refusals) {
                case .clientRejected:
                    recordGrant(reg, BrokerError.idpRejectedClient.code, actor: actor)
                    return (base.dropped, .refused)
                case .dpopRequired: refusal = .idpRejectedClient
                case .certificateRefused(let why): refusal = .idpCertificateRefused(reason: why)
                case .outage(let after): refusal = .idpUnavailable(retryAfter: after)
                case .ambiguous: refusal = .idpUnavailable(retryAfter: nil)
                case .grantDead(let reason), .retried(let reason):
                    refusal = .unprocessable(code: "idp_refused_grant", message: "the identity provider refused the client-credentials grant (\(reason))")
                }
                recordGrant(reg, refusal.code, actor: actor)
                throw refusal
            }
        }
        switch outcome {
        case .token(let t, let granted): return Granted(token: t, granted: granted)
        case .refused:
            try store.drop(tenant: reg.tenant, client: reg.id)
            throw BrokerError.idpRejectedClient
        }
    }

    private func recordGrant(_ reg: ClientRegistration, _ outcome: String, actor: String) {
        grants.add(outcome)
        audit.record(AuditEvent(at: clock.now(), actor: actor, action: .appTokenGrant, tenant: reg.tenant, session: nil, outcome: outcome, client: reg.id))
    }

    private func issue(_ t: AppToken, granted: Bool, minTTL: TimeInterval? = nil, dpop: [DPoPTarget] = []) throws -> IssuedAppToken {
        let now = clock.now()
        if let minTTL, case .reject(let e) = AppTokenDecision.afterGrant(t, minTTL: minTTL, now: now) { throw e }
        guard let at = t.accessToken, let exp = t.expiresAt else { throw BrokerError.internalError }
        var issued = IssuedAppToken(client: t.client, accessToken: at, tokenType: t.tokenType, expiresAt: exp,
                                    expiresIn: max(0, Int(exp.timeIntervalSince(now).rounded(.down))), scope: t.scopes, version: t.version, granted: granted)
        if !dpop.isEmpty {
            guard let keys = dpopKeys else { throw BrokerError.internalError }
            issued.dpopProofs = try keys.proofs(dpop, token: at, type: t.tokenType, key: t.dpopKey, now: now).get()
        }
        return issued
    }

    /// Audits the hand-out or refusal, counts it, marks a stored token used (a token handed
    /// out by the grant it waited for is not "used since its grant"), and passes it through.
    private func finish(_ r: Result<IssuedAppToken, BrokerError>, tenant: String, client: String, ask: AppTokenAsk,
                        actor: String) -> Result<IssuedAppToken, BrokerError> {
        let now = clock.now(), outcome: String
        switch r {
        case .success(let t):
            outcome = t.granted ? "granted" : "stored"
            handOuts.add(outcome)
            if !t.granted { usage.record(AppTokenKey(tenant: tenant, client: client, ask: ask), at: now) }
            audit.recordProofs(t.dpopProofs.count, actor: actor, tenant: tenant, session: nil, client: client, at: now)
        case .failure(let e):
            outcome = e.code
        }
        audit.record(AuditEvent(at: now, actor: actor, action: .appTokenIssue, tenant: tenant, session: nil, outcome: outcome, client: client))
        return r
    }

    /// Runs `body`, every error thrown turned into a BrokerError.
    private func guarding<T>(_ body: () throws -> T) throws(BrokerError) -> T {
        do { return try body() } catch let e as BrokerError { throw e } catch { throw BrokerError.internalError }
    }
}

/// AppTokenKey names one stored app token: its tenant, client and ask (a usage mark's key).
struct AppTokenKey: Hashable, Sendable {
    let tenant: String
    let client: String
    let ask: AppTokenAsk
}
