import BrokerCore
import Foundation

/// ExchangeService hands workers delegated tokens (RFC 8693): the session's access token, got as
/// any hand-out gets it (cached, or refreshed single-flight), is exchanged at the IdP for a
/// narrower one — an audience, a resource, fewer scopes — with, on request, an actor token
/// naming the calling principal, so that the issued token carries `act`. Exchanged tokens are
/// kept per (session, exchange, actor) until they expire, and one exchange per key runs at a
/// time in this process. An IdP refusal is the caller's error (400 with the IdP's code),
/// never a change of the session.
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
    let cache = ExchangeCache()
    let flights = SingleFlight<ExchangeCache.Key, Result<IssuedToken, BrokerError>>()

    public init(tokens: TokenService, registry: RegistryCache, endpoint: any TokenEndpoint, actors: ActorTokens, dpopKeys: DPoPKeys?,
                audit: any AuditSink, clock: any Clock, executor: BlockingExecutor) {
        self.tokens = tokens
        self.registry = registry
        self.endpoint = endpoint
        self.actors = actors
        self.dpopKeys = dpopKeys
        self.audit = audit
        self.clock = clock
        self.executor = executor
    }

    /// `completion` runs exactly once, on some thread.
    public func exchange(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest, _ ask: TokenExchange,
                         completion: @escaping Completion) {
        let subjectAsk = TokenRequest(minTTL: nil, scopes: request.scopes, forceRefresh: false)
        let deliver: @Sendable (Result<IssuedToken, BrokerError>, Bool) -> Void = { [self] r, cached in
            let outcome: String
            switch r {
            case .success: outcome = cached ? "cached" : "exchanged"
            case .failure(let e): outcome = e.code
            }
            audit.record(AuditEvent(at: clock.now(), actor: principal.id, action: .tokenExchange, tenant: tenant,
                                    session: (try? r.get())?.sessionID, outcome: outcome))
            completion(r)
        }
        let run: Completion = { [self] subject in
            guard case .success(let s) = subject else { return deliver(subject, false) }
            let key = ExchangeCache.Key(tenant: tenant, session: s.sessionID, ask: ask, actor: ask.act ? principal.id : nil)
            let now = clock.now()
            if let held = cache.get(key, now: now, minTTL: request.minTTL ?? 60) { return deliver(.success(Self.rebased(held, now: now)), true) }
            if flights.join(key, { deliver($0.map { Self.rebased($0, now: self.clock.now()) }, false) }) {
                executor.submit { [self] in flights.finish(key, call(key, subject: s, principal: principal, ask)) }
            }
        }
        if let r = tokens.cachedToken(by: principal, tenant: tenant, target: target, request: subjectAsk) { return run(r) }
        tokens.token(by: principal, tenant: tenant, target: target, request: subjectAsk, completion: run)
    }

    /// One exchange at the IdP; kept for the next identical ask.
    private func call(_ key: ExchangeCache.Key, subject s: IssuedToken, principal: Principal, _ ask: TokenExchange) -> Result<IssuedToken, BrokerError> {
        let now = clock.now()
        do {
            guard let client = try registry.client(tenant: key.tenant, id: try sessionClient(key, s), now: now) else {
                return .failure(.notFound("client"))
            }
            let actor = ask.act ? try actors.token(for: principal, audience: client.issuer) : nil
            let proof = try sessionProof(key)
            let sent = clock.now()
            let x: ExchangedToken
            do { x = try endpoint.exchange(client: client, subjectToken: s.accessToken, ask, actorToken: actor, dpop: proof) } catch {
                return .failure(Self.refusal(error))
            }
            let lifetime = x.grant.expiresIn ?? 60
            let expires = sent.addingTimeInterval(lifetime)
            let t = IssuedToken(accessToken: x.grant.accessToken, tokenType: x.grant.tokenType, expiresAt: expires,
                                expiresIn: Int(lifetime), scope: x.grant.scope ?? (ask.scopes.isEmpty ? s.scope : ask.scopes),
                                sessionID: s.sessionID, subject: s.subject, issuedTokenType: x.issuedTokenType)
            cache.put(key, t)
            return .success(t)
        } catch {
            return .failure((error as? BrokerError) ?? .internalError)
        }
    }

    /// The session the hand-out just served, from the session cache it filled (else the store).
    private func session(_ key: ExchangeCache.Key) throws -> Session {
        if let s = tokens.cache.get(SessionKey(tenant: key.tenant, id: key.session), now: clock.now()) { return s }
        guard let s = try tokens.store.session(tenant: key.tenant, id: key.session) else { throw BrokerError.notFound("session") }
        return s
    }

    private func sessionClient(_ key: ExchangeCache.Key, _ s: IssuedToken) throws -> String { try session(key).client }

    /// A DPoP-bound session exchanges with a proof of its key (the exchanged token is bound to it too).
    private func sessionProof(_ key: ExchangeCache.Key) throws -> DPoPProof? {
        guard let material = try session(key).dpopKey else { return nil }
        guard let p = dpopKeys?.prover(material) else { throw BrokerError.internalError }
        return p
    }

    /// The IdP's answer to a refused exchange, as the caller's error: its RFC 6749 / 8693 code
    /// kept (invalid_target, invalid_scope, …), never its description.
    static func refusal(_ e: TokenEndpointError) -> BrokerError {
        switch e {
        case .oauth(let o) where o.error == "invalid_client": return .idpRejectedClient
        case .oauth(let o):
            let code = OAuthError.isCode(o.error) ? o.error : "invalid_request"
            return .badRequest(code: code, message: "the identity provider refused the exchange (\(code))")
        case .refused(let status, _):
            return .badRequest(code: "exchange_refused", message: "the identity provider refused the exchange (HTTP \(status))")
        default: return e.callerError
        }
    }

    /// The token as of `now`: whole seconds left.
    static func rebased(_ t: IssuedToken, now: Date) -> IssuedToken {
        var r = IssuedToken(accessToken: t.accessToken, tokenType: t.tokenType, expiresAt: t.expiresAt,
                            expiresIn: max(0, Int(t.expiresAt.timeIntervalSince(now).rounded(.down))), scope: t.scope,
                            sessionID: t.sessionID, subject: t.subject)
        r.issuedTokenType = t.issuedTokenType
        return r
    }
}
