import BrokerCore
import Foundation
import Synchronization

/// ExchangeService hands workers delegated tokens (RFC 8693): the session's access token, got as
/// any hand-out gets it (cached, or refreshed single-flight), is exchanged at the IdP for a
/// narrower one — an audience, a resource, fewer scopes — with, on request, an actor token
/// naming the calling principal, so that the issued token carries `act`. Exchanged tokens are
/// kept per (session, exchange, actor) until they expire, and one exchange per key runs at a
/// time in this process. An IdP refusal is the caller's error (400 with the IdP's code),
/// never a change of the session. A DPoP-bound session exchanges with a proof of its key, and
/// the worker may ask proofs for the exchanged token as for the session's.
public final class ExchangeService: Sendable {
    public typealias Completion = @Sendable (Result<IssuedToken, BrokerError>) -> Void
    let tokens: TokenService
    let registry: RegistryCache
    let endpoint: any TokenEndpoint
    let actors: ActorTokens
    let dpopKeys: DPoPKeys?
    let audit: any AuditSink
    let clock: any Clock
    let executor: BlockingExecutor
    let events: @Sendable (LogLine) -> Void
    let cache = ExchangeCache()
    let flights = SingleFlight<ExchangeCache.Key, Result<IssuedToken, BrokerError>>()

    /// Where an answer came from, as the audit says it.
    enum Source: String { case exchanged, shared, cached }

    public init(tokens: TokenService, registry: RegistryCache, endpoint: any TokenEndpoint, actors: ActorTokens, dpopKeys: DPoPKeys?,
                audit: any AuditSink, clock: any Clock, executor: BlockingExecutor, events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.tokens = tokens
        self.registry = registry
        self.endpoint = endpoint
        self.actors = actors
        self.dpopKeys = dpopKeys
        self.audit = audit
        self.clock = clock
        self.executor = executor
        self.events = events
    }

    /// `completion` runs exactly once, on some thread.
    public func exchange(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest, _ ask: TokenExchange,
                         completion: @escaping Completion) {
        // The subject token goes to the provider, over the client's own connection (with its
        // certificate, RFC 8705): never to the worker, so a certificate-bound one is no refusal.
        var subjectAsk = TokenRequest(minTTL: nil, scopes: request.scopes, forceRefresh: false)
        subjectAsk.presentedByBroker = true
        // Audited as `token.exchange` (exchanged, shared with a flight, cached, or the error code),
        // with the session whenever it is known; each proof minted as `token.dpop_proof`.
        let deliver: @Sendable (Result<IssuedToken, BrokerError>, Source, String?) -> Void = { [self] exchanged, source, session in
            let r = withProofs(exchanged, request.dpop, tenant: tenant)
            let outcome: String
            switch r {
            case .success: outcome = source.rawValue
            case .failure(let e): outcome = e.code
            }
            audit.record(AuditEvent(at: clock.now(), actor: principal.id, action: .tokenExchange, tenant: tenant, session: session, outcome: outcome))
            if case .success(let t) = r { audit.recordProofs(t, actor: principal.id, tenant: tenant, at: clock.now()) }
            completion(r)
        }
        let run: Completion = { [self] subject in
            guard case .success(let s) = subject else { return deliver(subject, .exchanged, nil) }
            let key = ExchangeCache.Key(tenant: tenant, session: s.sessionID, ask: ask, actor: ask.act ? principal.id : nil)
            let now = clock.now()
            if let held = cache.get(key, now: now, minTTL: request.minTTL ?? 60) {
                return deliver(.success(Self.rebased(held, now: now)), .cached, s.sessionID)
            }
            // Set before the flight can end (it starts after the join): the leader's answer is its own exchange.
            let leader = LeaderMark()
            let leads = flights.join(key) { [self] r in
                deliver(r.map { Self.rebased($0, now: clock.now()) }, leader.isSet ? .exchanged : .shared, s.sessionID)
            }
            if leads {
                leader.set()
                executor.submit { [self] in
                    let r = call(key, subject: s, principal: principal, ask)
                    flights.finish(key, r)
                }
            }
        }
        switch tokens.handOut(by: principal, tenant: tenant, target: target, request: subjectAsk) {
        case .now(let r): run(r)
        case .later(let start): start(run)
        }
    }

    /// The exchanged token with a proof per target the worker named, made with the session's key.
    private func withProofs(_ r: Result<IssuedToken, BrokerError>, _ targets: [DPoPTarget], tenant: String) -> Result<IssuedToken, BrokerError> {
        guard case .success(var t) = r, !targets.isEmpty else { return r }
        guard let keys = dpopKeys else { return .failure(.internalError) }
        let key: DPoPKeyMaterial?
        do { key = try session(tenant: tenant, id: t.sessionID).dpopKey } catch {
            return .failure(BrokerError.answering(error) { cause in
                events(.unexpected(tenant: tenant, client: "", session: t.sessionID, doing: "reading the session's DPoP key", cause: cause))
            })
        }
        return keys.proofs(targets, token: t.accessToken, type: t.tokenType, key: key, now: clock.now()).map { proofs in
            t.dpopProofs = proofs
            return t
        }
    }

    /// One exchange at the IdP; kept for the next identical ask. A refusal is logged with the
    /// client and session (an error line when the IdP rejects the client itself).
    private func call(_ key: ExchangeCache.Key, subject s: IssuedToken, principal: Principal, _ ask: TokenExchange) -> Result<IssuedToken, BrokerError> {
        let now = clock.now()
        do {
            let session = try self.session(tenant: key.tenant, id: key.session)
            guard let client = try registry.client(tenant: key.tenant, id: session.client, now: now) else { return .failure(.notFound("client")) }
            let actor = ask.act ? try actors.token(for: principal, audience: client.issuer) : nil
            // A DPoP-bound session exchanges with a proof of its key (the exchanged token is bound to it too).
            var proof: DPoPProof?
            if let material = session.dpopKey {
                guard let p = dpopKeys?.prover(material) else { return .failure(.internalError) }
                proof = p
            }
            let sent = clock.now()
            let x: ExchangedToken
            do { x = try endpoint.exchange(client: client, subjectToken: s.accessToken, ask, actorToken: actor, dpop: proof) } catch {
                let e = Self.refusal(error)
                events(LogLine(tenant: key.tenant, client: client.id, session: key.session,
                               event: RefreshEvent(e == .idpRejectedClient ? .error : .warn, "exchange_refused",
                                                   "the token exchange failed (\(error.reason)); the session is unchanged")))
                return .failure(e)
            }
            if client.authMethod.needsCertificate,
               let refused = BoundTokenRule.of(presents: false, handOutAllowed: client.handOutCertificateBound, current: nil)
                   .refusal(exchanged: x.grant.accessToken, of: session) {
                return .failure(refused)
            }
            let t = IssuedToken(accessToken: x.grant.accessToken, tokenType: x.grant.tokenType,
                                expiresAt: Self.expiry(x.grant, sent: sent), expiresIn: 0,
                                scope: x.grant.scope ?? (ask.scopes.isEmpty ? s.scope : ask.scopes),
                                sessionID: s.sessionID, subject: s.subject, endUser: s.endUser, issuedTokenType: x.issuedTokenType)
            cache.put(key, t)
            return .success(Self.rebased(t, now: clock.now()))
        } catch {
            return .failure(BrokerError.answering(error) { cause in
                events(.unexpected(tenant: key.tenant, client: "", session: key.session, doing: "a token exchange", cause: cause))
            })
        }
    }

    /// When an exchanged token expires: `expires_in` from when the request was sent (300 s
    /// when the IdP says nothing, as for a sign-in), never later than a JWT's own `exp` — and
    /// a JWT's `exp` when `expires_in` is missing.
    static func expiry(_ g: TokenGrant, sent: Date) -> Date {
        guard let lifetime = g.expiresIn else {
            let fallback = sent.addingTimeInterval(300), own = AccessTokenExpiry.clamp(.distantFuture, token: g.accessToken)
            return own == .distantFuture ? fallback : own
        }
        return AccessTokenExpiry.clamp(sent.addingTimeInterval(lifetime), token: g.accessToken)
    }

    /// The session the hand-out just served, from the session cache it filled (else the store).
    private func session(tenant: String, id: String) throws -> Session {
        if let s = tokens.cache.get(SessionKey(tenant: tenant, id: id), now: clock.now()) { return s }
        guard let s = try tokens.store.session(tenant: tenant, id: id) else { throw BrokerError.notFound("session") }
        return s
    }

    /// The IdP's answer to a refused exchange, as the caller's error: its RFC 6749 / 8693 code
    /// kept (invalid_target, invalid_scope, …), its description when it is plain text, the
    /// endpoint and what the request carried (`OAuthError.told`). The IdP's own trouble
    /// (`server_error`, `temporarily_unavailable`) is an outage, not the caller's fault.
    static func refusal(_ e: TokenEndpointError) -> BrokerError {
        switch e {
        case .oauth(let o) where o.error == "invalid_client": return .idpRejectedClient
        case .oauth(let o) where o.error == "server_error" || o.error == "temporarily_unavailable": return .idpUnavailable(retryAfter: nil)
        case .oauth(let o):
            let code = OAuthError.isCode(o.error) ? o.error : "invalid_request"
            return .badRequest(code: code, message: "the identity provider refused the exchange: \(o.told)")
        case .refused(let status, _):
            return .badRequest(code: "exchange_refused", message: "the identity provider refused the exchange (HTTP \(status))")
        default: return e.callerError
        }
    }

    /// Marks the caller that leads a flight (its answer is its own exchange, the others share it).
    final class LeaderMark: Sendable {
        private let flag = Atomic<Bool>(false)
        func set() { flag.store(true, ordering: .releasing) }
        var isSet: Bool { flag.load(ordering: .acquiring) }
    }

    /// The token as of `now`: whole seconds left.
    static func rebased(_ t: IssuedToken, now: Date) -> IssuedToken {
        var r = IssuedToken(accessToken: t.accessToken, tokenType: t.tokenType, expiresAt: t.expiresAt,
                            expiresIn: max(0, Int(t.expiresAt.timeIntervalSince(now).rounded(.down))), scope: t.scope,
                            sessionID: t.sessionID, subject: t.subject, endUser: t.endUser)
        r.issuedTokenType = t.issuedTokenType
        return r
    }
}
