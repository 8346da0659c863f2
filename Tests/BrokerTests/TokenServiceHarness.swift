import Broker
import BrokerCore
import BrokerTesting
import Foundation

/// A TokenService over in-memory fakes, with one tenant "t1", one client "app", and a worker.
struct TokenServiceHarness {
    let clock: ManualClock
    let store = InMemorySessionStore()
    let registry = InMemoryRegistryStore()
    let audit = RecordingAuditSink()
    let feed = LocalChangeFeed()
    let endpoint: ScriptedTokenEndpoint
    let service: TokenService
    let refresher: RefreshDriver
    let worker = Principal(id: "worker-key", name: "w", roles: [.worker], tenants: ["t1"])

    /// `wrap` puts something between the service and the store (a test's interference).
    init(clock: ManualClock = ManualClock(), endpoint: ScriptedTokenEndpoint = ScriptedTokenEndpoint(), lockTimeout: TimeInterval = 5, failover: FailoverGuard? = nil,
         wrap: (InMemorySessionStore) -> any SessionStore = { $0 }) throws {
        self.clock = clock
        self.endpoint = endpoint
        _ = try registry.putTenant(id: "t1", name: "T1", now: clock.now())
        _ = try registry.putTenant(id: "t2", name: "T2", now: clock.now())
        for t in ["t1", "t2"] {
            _ = try registry.putClient(ClientRegistration(tenant: t, id: "app", issuer: "https://idp.example", clientID: "app",
                                                          authMethod: .clientSecretBasic, redirectURI: "https://b/cb", scopes: ["openid"]),
                                       secret: "s", assertionKey: nil, now: clock.now())
        }
        let sessions = wrap(store), registryCache = RegistryCache(store: registry, maxAge: 60)
        let executor = BlockingExecutor(threads: 8, name: "test"), cache = SessionCache(maxAge: 60, capacity: 1000)
        refresher = RefreshDriver(store: sessions, registry: registryCache, endpoint: endpoint, audit: audit, feed: feed, clock: clock,
                                  executor: executor, cache: cache, failover: failover, lockTimeout: lockTimeout, jitter: { 0 })
        service = TokenService(store: sessions, registry: registryCache, audit: audit, clock: clock, executor: executor, cache: cache,
                               refresher: refresher, lockTimeout: lockTimeout)
    }

    /// Stores a session whose access token lives `ttl` seconds from now.
    func addSession(tenant: String = "t1", subject: String = "alice", ttl: TimeInterval?, refreshToken: String = "rt-0",
                    endUser: String? = nil) throws -> Session {
        var s = SessionStoreContract.sample(tenant: tenant, subject: subject, createdAt: clock.now(), endUser: endUser)
        s.accessToken = ttl == nil ? nil : "at-0"
        s.accessExpiresAt = ttl.map { clock.now() + $0 }
        s.refreshToken = refreshToken
        try store.insert(s)
        return s
    }

    func token(_ target: TokenTarget, tenant: String = "t1", _ request: TokenRequest = TokenRequest(minTTL: 60)) async -> Result<IssuedToken, BrokerError> {
        await withCheckedContinuation { c in
            service.token(by: worker, tenant: tenant, target: target, request: request) { c.resume(returning: $0) }
        }
    }

    /// The answer from memory, or nil when it would come later.
    func cached(_ target: TokenTarget, _ request: TokenRequest = TokenRequest(minTTL: 60)) -> Result<IssuedToken, BrokerError>? {
        if case .now(let r) = service.handOut(by: worker, tenant: "t1", target: target, request: request) { return r }
        return nil
    }
}
