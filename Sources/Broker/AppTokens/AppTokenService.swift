import BrokerCore
import Foundation

/// AppTokenService hands out app tokens (the client-credentials grant, RFC 6749 §4.4): the
/// stored token when it lives min_ttl, else one new grant shared by every caller — in this
/// process through a BlockingSingleFlight per tenant, client and ask, across replicas through
/// the store's grant lock, under which the row is re-read so that a replica finding a token
/// another wrote uses it. A disabled or deleted client gets none; an IdP that refuses the client
/// (invalid_client, unauthorized_client, 401) drops every stored token of it.
///
/// Calls block: run them on worker threads (routes use the executor).
public final class AppTokenService: Sendable {
    let store: any AppTokenStore
    let registry: RegistryCache
    let endpoint: any TokenEndpoint
    let dpopKeys: DPoPKeys?
    let clock: any Clock
    let lockTimeout: TimeInterval
    private let flights = BlockingSingleFlight<String, AppToken, BrokerError>()

    public init(store: any AppTokenStore, registry: RegistryCache, endpoint: any TokenEndpoint, dpopKeys: DPoPKeys?, clock: any Clock,
                lockTimeout: TimeInterval = 10) {
        self.store = store
        self.registry = registry
        self.endpoint = endpoint
        self.dpopKeys = dpopKeys
        self.clock = clock
        self.lockTimeout = lockTimeout
    }

    /// The client's app token for `ask`, living at least `minTTL` (nil: the client's policy's
    /// default, as for sessions).
    public func token(tenant: String, client: String, ask: AppTokenAsk, minTTL: TimeInterval?) throws(BrokerError) -> IssuedAppToken {
        try guarding {
            let now = clock.now()
            let reg = try servedClient(tenant: tenant, client: client, now: now)
            let stored = try store.appToken(tenant: tenant, client: client, ask: ask)
            let need = minTTL ?? reg.refreshPolicy.defaultMinTTL(lifetime: stored?.lifetime)
            switch AppTokenDecision.decide(stored, minTTL: need, now: now) {
            case .serve: return try issue(stored!, granted: false)
            case .reject(let e): throw e
            case .grant: return try issue(try grant(reg, ask: ask, minTTL: need, ifStill: nil), granted: true, minTTL: need)
            }
        }
    }

    /// A forced renewal: a new grant unless the stored token moved past `version` (the one the
    /// caller saw refused upstream) — then the stored one. Concurrent callers naming the same
    /// version make one grant, across replicas.
    public func renew(tenant: String, client: String, ask: AppTokenAsk, ifStill version: Int64) throws(BrokerError) -> IssuedAppToken {
        try guarding {
            let reg = try servedClient(tenant: tenant, client: client, now: clock.now())
            let need = reg.refreshPolicy.defaultMinTTL(lifetime: nil)
            return try issue(try grant(reg, ask: ask, minTTL: need, ifStill: version), granted: true, minTTL: need)
        }
    }

    /// The client when it may have an app token: its tenant enabled, it registered and enabled.
    func servedClient(tenant: String, client: String, now: Date) throws -> ClientRegistration {
        _ = try registry.activeTenant(tenant, now: now)
        guard let reg = try registry.client(tenant: tenant, id: client, now: now) else { throw BrokerError.notFound("client") }
        guard !reg.disabled else { throw BrokerError.conflict(code: "client_disabled", message: "the client is disabled: it gets no app token") }
        return reg
    }

    /// One grant for every concurrent caller of this process, under the cross-replica lock.
    private func grant(_ reg: ClientRegistration, ask: AppTokenAsk, minTTL: TimeInterval, ifStill: Int64?) throws -> AppToken {
        let key = reg.tenant + "\n" + AppToken.id(client: reg.id, ask: ask) + "\n" + (ifStill.map(String.init) ?? "")
        return try flights.run(key) { () throws(BrokerError) in
            try guarding { try locked(reg, ask: ask, minTTL: minTTL, ifStill: ifStill) }
        }
    }

    private enum Locked { case token(AppToken), refused }

    private func locked(_ reg: ClientRegistration, ask: AppTokenAsk, minTTL: TimeInterval, ifStill: Int64?) throws -> AppToken {
        let outcome = try store.withGrantLock(tenant: reg.tenant, client: reg.id, ask: ask, timeout: lockTimeout) { row -> (write: AppToken?, result: Locked) in
            switch AppTokenDecision.decideLocked(row, minTTL: minTTL, ifStill: ifStill, now: clock.now()) {
            case .serve: return (nil, .token(row!))
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
                return (fresh, .token(fresh))
            } catch {
                switch RefreshFailure.classify(error, reg.descriptor.refusals) {
                case .clientRejected: return (base.dropped, .refused)
                case .dpopRequired: throw BrokerError.idpRejectedClient
                case .certificateRefused(let why): throw BrokerError.idpCertificateRefused(reason: why)
                case .outage(let after): throw BrokerError.idpUnavailable(retryAfter: after)
                case .ambiguous: throw BrokerError.idpUnavailable(retryAfter: nil)
                case .grantDead(let reason), .retried(let reason):
                    throw BrokerError.unprocessable(code: "idp_refused_grant", message: "the identity provider refused the client-credentials grant (\(reason))")
                }
            }
        }
        switch outcome {
        case .token(let t): return t
        case .refused:
            try store.drop(tenant: reg.tenant, client: reg.id)
            throw BrokerError.idpRejectedClient
        }
    }

    private func issue(_ t: AppToken, granted: Bool, minTTL: TimeInterval? = nil) throws -> IssuedAppToken {
        let now = clock.now()
        if let minTTL, case .reject(let e) = AppTokenDecision.afterGrant(t, minTTL: minTTL, now: now) { throw e }
        guard let at = t.accessToken, let exp = t.expiresAt else { throw BrokerError.internalError }
        return IssuedAppToken(client: t.client, accessToken: at, tokenType: t.tokenType, expiresAt: exp,
                              expiresIn: max(0, Int(exp.timeIntervalSince(now).rounded(.down))), scope: t.scopes, version: t.version, granted: granted)
    }

    /// Runs `body`, every error thrown turned into a BrokerError.
    private func guarding<T>(_ body: () throws -> T) throws(BrokerError) -> T {
        do { return try body() } catch let e as BrokerError { throw e } catch { throw BrokerError.internalError }
    }
}
