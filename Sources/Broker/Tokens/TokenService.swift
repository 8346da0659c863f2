import Foundation
import BrokerCore

/// TokenService hands access tokens to workers: from memory when the token held serves the
/// request, else after a refresh run by the refresh driver (RefreshDriver), which it hands the
/// session, the client and the requirement it decided on — nothing is looked up twice.
///
/// The fast path (`handOut` answering `.now`) answers from memory without blocking. Everything
/// that may block (loading a row, the refresh) runs on the executor or in the driver's flight;
/// callers waiting for the same refresh hold no thread. A caller waits at most `lockTimeout`:
/// then it gets the held token if that still serves it, else `refresh_busy`; the flight goes on.
public final class TokenService: Sendable {
    public typealias Completion = @Sendable (Result<IssuedToken, BrokerError>) -> Void

    /// A hand-out's answer: now, or later — `start` with the completion that takes it.
    public enum HandOut: Sendable {
        case now(Result<IssuedToken, BrokerError>)
        case later(@Sendable (_ completion: @escaping Completion) -> Void)
    }

    /// What memory says of a target: the answer, the refresh it needs, or nothing (a miss).
    enum Lookup {
        case answered(Result<IssuedToken, BrokerError>)
        case refresh(Session, ClientRegistration, TokenRequirement)
        case miss
    }

    let store: any SessionStore
    let registry: RegistryCache
    let audit: any AuditSink
    let clock: any Clock
    let executor: BlockingExecutor
    public let cache: SessionCache
    public let refresher: RefreshDriver
    public let usage: UsageRecorder<SessionKey>
    let lockTimeout: TimeInterval
    /// The sessions' DPoP keys (nil in unit tests without DPoP sessions).
    let dpopKeys: DPoPKeys?

    public var metrics: TokenMetrics { refresher.metrics }

    public init(store: any SessionStore, registry: RegistryCache, audit: any AuditSink, clock: any Clock, executor: BlockingExecutor,
                cache: SessionCache, refresher: RefreshDriver, dpopKeys: DPoPKeys? = nil, lockTimeout: TimeInterval = 10) {
        self.store = store
        self.registry = registry
        self.audit = audit
        self.clock = clock
        self.executor = executor
        self.cache = cache
        self.refresher = refresher
        self.usage = UsageRecorder()
        self.lockTimeout = lockTimeout
        self.dpopKeys = dpopKeys
    }

    /// Answers from memory when it can, else says how the answer comes later: after the
    /// refresh the held session needs, or after the session is read. Never blocks.
    public func handOut(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest) -> HandOut {
        var log: HandOutLog? = nil
        switch lookUp(by: principal, tenant: tenant, target: target, request: request, log: &log) {
        case .answered(let r):
            return .now(r)
        case .refresh(let s, let client, let need):
            return .later { [self] in
                awaitRefresh(s, client, need, principal: principal, request: request, attempt: 0, until: deadline(), completion: $0)
            }
        case .miss:
            return .later { [self] in token(by: principal, tenant: tenant, target: target, request: request, completion: $0) }
        }
    }

    /// What memory says of a target, with the tenant, client and session cached. With a `log`
    /// (a batch), what the hand-out leaves behind is collected there and each client's policy is
    /// looked up once.
    func lookUp(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest, log: inout HandOutLog?) -> Lookup {
        let now = clock.now()
        guard let t = registry.peekTenant(tenant, now: now) else { return .miss }
        guard let t, !t.disabled else { return .answered(finish(.failure(.notFound("tenant")), principal, tenant, nil, now, audited: request.audited, into: &log)) }
        let id: String
        switch target {
        case .session(let s): id = s
        case .subject(let client, let subject):
            guard let s = cache.sessionID(tenant: tenant, client: client, subject: subject) else { return .miss }
            id = s
        case .endUser(let client, let endUser):
            guard let s = cache.sessionID(tenant: tenant, client: client, endUser: endUser) else { return .miss }
            id = s
        }
        guard let held = cache.entry(SessionKey(tenant: tenant, id: id), now: now) else { return .miss }
        if case .endUser = target, held.session.state != .active { return .miss }   // the store chooses again (resolve)
        let session = held.session
        // The policy alone on the hot path: the whole registration only when it refreshes.
        let policy: RefreshPolicy
        if let p = log?.policies[session.client] { policy = p } else {
            guard let p = registry.peekPolicy(tenant: tenant, client: session.client, now: now) else { return .miss }
            policy = p
            log?.policies[session.client] = p
        }
        var need = request.requirement(policy: policy, lifetime: session.accessLifetime)
        if session.certificateBinding != nil {
            // A certificate-bound token (rare): the registration says who may have it.
            guard let c = registry.peekClient(tenant: tenant, id: session.client, now: now), let client = c else { return .miss }
            need.bound = request.boundRule(for: client)
        }
        switch TokenDecision.decide(session, need, now: now) {
        case .serve:
            metrics.cacheHits.add()
            return .answered(finish(issue(session, now: now, request, promised: need.minTTL, memo: held.document), principal, tenant, id, now, audited: request.audited, into: &log))
        case .reject(let e):
            return .answered(finish(.failure(e), principal, tenant, id, now, audited: request.audited, into: &log))
        case .refresh:
            guard let c = registry.peekClient(tenant: tenant, id: session.client, now: now), let client = c else { return .miss }
            // The refresh may bring a bound token where there was none: its rule is the client's.
            need.bound = request.boundRule(for: client)
            return .refresh(session, client, need)
        }
    }

    /// The slow path: reads what memory lacks, decides, refreshes if it must. `completion` runs
    /// exactly once, on some thread.
    /// `until`: when the caller stops waiting (default: `lockTimeout` from now).
    public func token(by principal: Principal, tenant: String, target: TokenTarget, request: TokenRequest, until: Date? = nil,
                      completion: @escaping Completion) {
        let until = until ?? deadline()
        executor.submit { [self] in
            let now = clock.now()
            do {
                _ = try registry.activeTenant(tenant, now: now)
                let session = try resolve(tenant: tenant, target: target, now: now)
                guard let client = try registry.client(tenant: tenant, id: session.client, now: now) else { throw BrokerError.notFound("client") }
                answer(session, client, principal: principal, request: request, attempt: 0, until: until, completion: completion)
            } catch {
                completion(finish(.failure(refresher.brokerError(error, doing: "a token request")), principal, tenant, nil, now, audited: request.audited))
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

    /// Drops what the change feed says changed elsewhere.
    public func forget(_ change: Change) {
        switch change {
        case .session(let tenant, let id):
            cache.remove(SessionKey(tenant: tenant, id: id))
            refresher.noticed(SessionKey(tenant: tenant, id: id))
        case .scheduled(let tenant, let id, _, _, let version):
            // A write committed somewhere: the copy held here is superseded.
            cache.remove(SessionKey(tenant: tenant, id: id), olderThan: version)
            refresher.noticed(SessionKey(tenant: tenant, id: id))
        case .subject(let tenant, let client, let subject): cache.forgetSubject(tenant: tenant, client: client, subject: subject)
        case .endUser(let tenant, let client, let endUser): cache.forgetEndUser(tenant: tenant, client: client, endUser: endUser)
        case .tenant(let t): cache.removeTenant(t)
        case .resync: cache.removeAll()
        default: break
        }
    }

    /// When a caller asking now stops waiting for a refresh.
    func deadline() -> Date { clock.now().addingTimeInterval(lockTimeout) }

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
        case .endUser(let client, let endUser):
            // The session chosen last, while it is active: once it ended (revoked, needs
            // re-authentication) the store chooses again, as it would have without the cache — a
            // newer session arrives by the change feed (Change.endUser), an ended one this way.
            if let id = cache.sessionID(tenant: tenant, client: client, endUser: endUser),
               let s = cache.get(SessionKey(tenant: tenant, id: id), now: now), s.state == .active { return s }
            guard let s = try store.latestSession(tenant: tenant, client: client, endUser: endUser) else {
                throw BrokerError.notFound("session")
            }
            cache.put(s, now: now)
            cache.setSessionID(s.id, tenant: tenant, client: client, endUser: endUser)
            return s
        }
    }

    /// Serves, refuses, or refreshes `session` for `request`.
    func answer(_ session: Session, _ client: ClientRegistration, principal: Principal, request: TokenRequest, attempt: Int,
                        until: Date, completion: @escaping Completion) {
        let now = clock.now()
        let need = request.requirement(policy: client.refreshPolicy, lifetime: session.accessLifetime, bound: request.boundRule(for: client))
        switch TokenDecision.decide(session, need, now: now) {
        case .serve:
            completion(finish(issue(session, now: now, request, promised: need.minTTL), principal, session.tenant, session.id, now, audited: request.audited))
        case .reject(let e):
            completion(finish(.failure(e), principal, session.tenant, session.id, now, audited: request.audited))
        case .refresh:
            awaitRefresh(session, client, need, principal: principal, request: request, attempt: attempt, until: until, completion: completion)
        }
    }

    /// Has the driver refresh `session` to `need` and answers with what the flight brings —
    /// or, at the caller's deadline `until`, with the held token if it still serves, else
    /// `refresh_busy`; the flight goes on without it.
    func awaitRefresh(_ session: Session, _ client: ClientRegistration, _ need: TokenRequirement, principal: Principal,
                      request: TokenRequest, attempt: Int, until: Date, completion: @escaping Completion) {
        let key = SessionKey(tenant: session.tenant, id: session.id)
        let tenant = session.tenant
        let once = Once(completion)
        executor.after(max(0, until.timeIntervalSince(clock.now()))) { [self] in
            guard let deliver = once.take() else { return }
            let now = clock.now()
            let held = cache.get(key, now: now) ?? session
            if TokenDecision.lives(held, need, now), need.bound.refusal(held) == nil, !need.forceRefresh || held.version != session.version {
                deliver(finish(issue(held, now: now, request, promised: need.minTTL), principal, tenant, session.id, now, audited: request.audited))
            } else {
                deliver(finish(.failure(.refreshBusy), principal, tenant, session.id, now, audited: request.audited))
            }
        }
        refresher.refresh(session, client: client, need: need, actor: principal.id) { [self] result in
            guard let deliver = once.take() else { return }
            let now = clock.now()
            switch result {
            case .failure(.refreshBusy) where attempt == 0:
                // We joined a timer-driven flight that only tried the lock; wait for it ourselves.
                executor.submit { self.answer(session, client, principal: principal, request: request, attempt: 1, until: until, completion: deliver) }
            case .failure(let e):
                // In backoff or with an attempt in flight, a still-good token is better than a refusal.
                if let held = cache.get(key, now: now), TokenDecision.lives(held, need, now), need.bound.refusal(held) == nil, !need.forceRefresh {
                    deliver(finish(issue(held, now: now, request, promised: need.minTTL), principal, tenant, held.id, now, audited: request.audited))
                } else {
                    deliver(finish(.failure(e), principal, tenant, session.id, now, audited: request.audited))
                }
            case .success(let (fresh, refreshed)):
                // A default min_ttl follows the lifetime the IdP now reports.
                let need = request.minTTL == nil
                    ? request.requirement(policy: client.refreshPolicy, lifetime: fresh.accessLifetime, bound: need.bound) : need
                switch TokenDecision.afterRefresh(fresh, need, now: now) {
                case .serve:
                    deliver(finish(issue(fresh, now: now, request, promised: need.minTTL), principal, tenant, fresh.id, now, refreshed: refreshed, audited: request.audited))
                case .reject(let e):
                    if !refreshed && attempt == 0 {
                        // The flight we joined was led by a caller content with less; ask again.
                        executor.submit { self.answer(fresh, client, principal: principal, request: request, attempt: 1, until: until, completion: deliver) }
                    } else {
                        deliver(finish(.failure(e), principal, tenant, fresh.id, now, audited: request.audited))
                    }
                case .refresh:
                    deliver(finish(.failure(.internalError), principal, tenant, fresh.id, now, audited: request.audited))
                }
            }
        }
    }
}
