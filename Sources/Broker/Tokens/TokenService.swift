import Foundation
import BrokerCore

/// TokenService hands access tokens to workers (spec §4.1) and refreshes them when it must —
/// single-flight in this process (SingleFlight) and across replicas (the store's refresh lock).
///
/// The fast path (`cachedToken`) answers from memory without blocking. Everything that may block
/// (loading a row, taking the lock, calling the IdP) runs on the executor; callers waiting for
/// the same refresh hold no thread.
///
/// Guarantee: a refresh token is presented only after the refresh machine, under the session's
/// lock, recorded the attempt (committed before the call); it is never presented again while
/// that attempt stands (spec §5). Callers wait at most `lockTimeout`; the flight itself waits for
/// the IdP up to `patience`, in the background if need be.
public final class TokenService: Sendable {
    public typealias Completion = @Sendable (Result<IssuedToken, BrokerError>) -> Void

    /// Why a flight ended with a session: refreshed by this flight, or found fresh under the lock.
    typealias FlightResult = Result<(session: Session, refreshed: Bool), BrokerError>

    let store: any SessionStore
    let registry: RegistryCache
    let endpoint: any TokenEndpoint
    let audit: any AuditSink
    let feed: any ChangeFeed
    let clock: any Clock
    let executor: BlockingExecutor
    public let cache: SessionCache
    public let usage: UsageRecorder
    public let metrics: TokenMetrics
    let flights = SingleFlight<SessionKey, FlightResult>()
    let lockTimeout: TimeInterval
    let retry: RetryPolicy
    /// How long a sent refresh request is waited for (spec §5), independently of callers.
    let patience: TimeInterval
    let jitter: @Sendable () -> Double
    let events: @Sendable (LogLine) -> Void
    public let circuits: ClientCircuits
    let pending = PendingAnswers()
    /// IdP answers waiting for the database, for metrics.
    public var pendingAnswers: Int { pending.count }
    let notices = SessionNotices()
    /// Checks ID tokens that come back with a refresh (OIDC Core §12.2); nil in unit tests
    /// whose IdP returns none.
    let idTokens: JWTVerifier?
    /// The sessions' DPoP keys (nil in unit tests without DPoP sessions).
    let dpopKeys: DPoPKeys?

    public init(store: any SessionStore, registry: RegistryCache, endpoint: any TokenEndpoint, audit: any AuditSink,
                feed: any ChangeFeed, clock: any Clock, executor: BlockingExecutor, cache: SessionCache,
                idTokens: JWTVerifier? = nil, dpopKeys: DPoPKeys? = nil, lockTimeout: TimeInterval = 10, retry: RetryPolicy = RetryPolicy(),
                patience: TimeInterval = 120, jitter: @escaping @Sendable () -> Double = { Double.random(in: -1...1) },
                events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.store = store
        self.registry = registry
        self.endpoint = endpoint
        self.audit = audit
        self.feed = feed
        self.clock = clock
        self.executor = executor
        self.cache = cache
        self.usage = UsageRecorder()
        self.metrics = TokenMetrics()
        self.lockTimeout = lockTimeout
        self.retry = retry
        self.patience = patience
        self.jitter = jitter
        self.events = events
        self.circuits = ClientCircuits(retry: retry)
        self.idTokens = idTokens
        self.dpopKeys = dpopKeys
    }

    /// Answers from memory when it can: the tenant, client and session are cached and the
    /// decision is to serve or to refuse. Nil means "take the slow path"; never blocks.
    public func cachedToken(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest) -> Result<IssuedToken, BrokerError>? {
        var log: HandOutLog? = nil
        return cachedToken(by: principal, tenant: tenant, target: target, request: request, log: &log)
    }

    /// The same; with a `log` (a batch), what the hand-out leaves behind is collected there and
    /// each client's policy is looked up once.
    func cachedToken(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest,
                     log: inout HandOutLog?) -> Result<IssuedToken, BrokerError>? {
        let now = clock.now()
        guard let t = registry.peekTenant(tenant, now: now) else { return nil }
        guard let t, !t.disabled else { return finish(.failure(.notFound("tenant")), principal, tenant, nil, now, into: &log) }
        let id: String
        switch target {
        case .session(let s): id = s
        case .subject(let client, let subject):
            guard let s = cache.sessionID(tenant: tenant, client: client, subject: subject) else { return nil }
            id = s
        }
        guard let held = cache.entry(SessionKey(tenant: tenant, id: id), now: now) else { return nil }
        let session = held.session
        let client = session.client
        let policy: RefreshPolicy
        if let p = log?.policies[client] { policy = p } else {
            guard let p = registry.peekPolicy(tenant: tenant, client: client, now: now) else { return nil }
            policy = p
            log?.policies[client] = p
        }
        switch TokenDecision.decide(session, request.requirement(policy: policy, lifetime: session.accessLifetime), now: now) {
        case .serve:
            metrics.cacheHits.add()
            return finish(issue(session, now: now, request, memo: held.document), principal, tenant, id, now, into: &log)
        case .reject(let e):
            return finish(.failure(e), principal, tenant, id, now, into: &log)
        case .refresh:
            return nil
        }
    }

    /// The whole path: resolve, decide, refresh single-flight if needed. `completion` runs
    /// exactly once, on some thread.
    public func token(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest, completion: @escaping Completion) {
        executor.submit { [self] in
            let now = clock.now()
            do {
                _ = try registry.activeTenant(tenant, now: now)
                let session = try resolve(tenant: tenant, target: target, now: now)
                serveOrRefresh(session, principal: principal, request: request, attempt: 0, completion: completion)
            } catch {
                completion(finish(.failure(Self.brokerError(error)), principal, tenant, nil, now))
            }
        }
    }

    /// Loads sessions into the cache in one query (a batch's misses), so that each item then
    /// resolves from memory.
    /// Returns the ids found (nil when the store could not be asked).
    @discardableResult
    public func preload(tenant: String, ids: [String]) -> Set<String>? {
        guard !ids.isEmpty else { return [] }
        // Unreadable now: nil, and each item is then read (and its error answered) on its own.
        guard let found = try? store.sessions(tenant: tenant, ids: ids) else { return nil }
        let now = clock.now()
        for s in found { cache.put(s, now: now) }
        return Set(found.map(\.id))
    }

    /// Runs a due session's refresh on the calling (engine worker) thread, sharing the flight
    /// with any on-demand request for it, and says when the session is next due (nil: never).
    /// `read`: the row as read with its tick's others, if it was.
    public func refreshDue(_ key: SessionKey, client: String, read: DueRow? = nil) -> DueOutcome {
        let done = DispatchSemaphore(value: 0)
        let joined = ResultBox()
        if flights.join(key, { joined.set($0); done.signal() }) {
            let (result, retryAt) = fly(key, client: client, .due, actor: "engine", read: read)
            flights.finish(key, result)
            done.wait()
            switch result {
            case .success(let (s, _)): return .next(s.state == .active ? s.nextRefreshAt : nil)
            case .failure(.refreshBusy): return retryAt.map { .next($0) } ?? .busy
            case .failure(.sessionNotActive), .failure(.notFound): return .next(nil)
            case .failure: return .next(retryAt ?? clock.now().addingTimeInterval(retry.cap))
            }
        }
        done.wait()
        // Joined someone else's flight: its row is now the truth.
        if case .success(let (s, _)) = joined.get() { return .next(s.state == .active ? s.nextRefreshAt : nil) }
        return .busy
    }

    /// Drops what the change feed says changed elsewhere.
    public func forget(_ change: Change) {
        switch change {
        case .session(let tenant, let id):
            cache.remove(SessionKey(tenant: tenant, id: id))
            notices.signal(SessionKey(tenant: tenant, id: id))
        case .scheduled(let tenant, let id, _, _, let version):
            // A write committed somewhere: the copy held here is superseded (spec §5).
            cache.remove(SessionKey(tenant: tenant, id: id), olderThan: version)
            notices.signal(SessionKey(tenant: tenant, id: id))
        case .subject(let tenant, let client, let subject): cache.forgetSubject(tenant: tenant, client: client, subject: subject)
        case .tenant(let t): cache.removeTenant(t)
        case .resync: cache.removeAll()
        default: break
        }
    }

    final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value: FlightResult?
        func set(_ v: FlightResult) { lock.withLock { value = v } }
        func get() -> FlightResult? { lock.withLock { value } }
    }

    private func resolve(tenant: String, target: TokenTarget, now: Date) throws -> Session {
        switch target {
        case .session(let id):
            if let s = cache.get(SessionKey(tenant: tenant, id: id), now: now) { return s }
            guard let s = try store.session(tenant: tenant, id: id) else { throw BrokerError.notFound("session") }
            cache.put(s, now: now)
            return s
        case .subject(let client, let subject):
            if let id = cache.sessionID(tenant: tenant, client: client, subject: subject),
               let s = cache.get(SessionKey(tenant: tenant, id: id), now: now) { return s }
            guard let s = try store.latestSession(tenant: tenant, client: client, subject: subject) else {
                throw BrokerError.notFound("session")
            }
            cache.put(s, now: now)
            cache.setSessionID(s.id, tenant: tenant, client: client, subject: subject)
            return s
        }
    }

    private func serveOrRefresh(_ session: Session, principal: Principal, request: TokenRequest, attempt: Int, completion: @escaping Completion) {
        let now = clock.now()
        let tenant = session.tenant
        let client: ClientRegistration
        do {
            guard let c = try registry.client(tenant: tenant, id: session.client, now: now) else { throw BrokerError.notFound("client") }
            client = c
        } catch {
            return completion(finish(.failure(Self.brokerError(error)), principal, tenant, session.id, now))
        }
        let need = request.requirement(policy: client.refreshPolicy, lifetime: session.accessLifetime)
        switch TokenDecision.decide(session, need, now: now) {
        case .serve:
            completion(finish(issue(session, now: now, request), principal, tenant, session.id, now, refreshed: false))
        case .reject(let e):
            completion(finish(.failure(e), principal, tenant, session.id, now))
        case .refresh:
            let key = SessionKey(tenant: tenant, id: session.id)
            // The caller waits at most `lockTimeout`; the flight goes on without it (spec §5).
            let once = Once(completion)
            executor.after(lockTimeout) { [self] in
                guard let deliver = once.take() else { return }
                let now = clock.now()
                let held = cache.get(key, now: now) ?? session
                if TokenDecision.lives(held, need, now), !need.forceRefresh || held.version != session.version {
                    deliver(finish(issue(held, now: now, request), principal, tenant, session.id, now))
                } else {
                    deliver(finish(.failure(.refreshBusy), principal, tenant, session.id, now))
                }
            }
            let leads = flights.join(key) { [self] result in
                let now = clock.now()
                switch result {
                case .failure(.refreshBusy) where attempt == 0:
                    // We joined a timer-driven flight that only tried the lock; wait for it ourselves.
                    guard let deliver = once.take() else { return }
                    executor.submit { self.serveOrRefresh(session, principal: principal, request: request, attempt: 1, completion: deliver) }
                case .failure(let e):
                    // In backoff or with an attempt in flight, a still-good token is better than a refusal.
                    guard let deliver = once.take() else { return }
                    if let held = cache.get(key, now: now), TokenDecision.lives(held, need, now), !need.forceRefresh {
                        deliver(finish(issue(held, now: now, request), principal, tenant, held.id, now))
                    } else {
                        deliver(finish(.failure(e), principal, tenant, session.id, now))
                    }
                case .success(let (fresh, refreshed)):
                    guard let deliver = once.take() else { return }
                    // A default min_ttl follows the lifetime the IdP now reports.
                    let need = request.minTTL == nil ? request.requirement(policy: client.refreshPolicy, lifetime: fresh.accessLifetime) : need
                    switch TokenDecision.afterRefresh(fresh, need, now: now) {
                    case .serve:
                        deliver(finish(issue(fresh, now: now, request), principal, tenant, fresh.id, now, refreshed: refreshed))
                    case .reject(let e):
                        if !refreshed && attempt == 0 {
                            // The flight we joined was led by a caller content with less; ask again.
                            executor.submit { self.serveOrRefresh(fresh, principal: principal, request: request, attempt: 1, completion: deliver) }
                        } else {
                            deliver(finish(.failure(e), principal, tenant, fresh.id, now))
                        }
                    case .refresh:
                        deliver(finish(.failure(.internalError), principal, tenant, fresh.id, now))
                    }
                }
            }
            if leads {
                executor.submit { [self] in
                    flights.finish(key, fly(key, client: session.client, .demand(seenVersion: session.version, need: need), actor: principal.id).result)
                }
            }
        }
    }
}
