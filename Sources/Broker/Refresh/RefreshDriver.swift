import BrokerCore
import Foundation

/// RefreshDriver runs refresh flights: the one place where a refresh token is presented. The
/// timer engine (`refreshDue`) and the token service (`refresh`) both call it, and share a
/// flight when they want the same session at once — single-flight in this process
/// (SingleFlight) and across replicas (RefreshFlight's guards: the version compare-and-set and
/// the session's advisory lock; RefreshFlight says which guards what, and when).
///
/// Each flight's loop is RefreshFlight's; its steps are the refresh machine's (RefreshMachine);
/// this class performs what they decide — the store's statements, the IdP call, the waits — and
/// keeps what outlives a flight: answers waiting for the database, the clients' circuits, the
/// waits for other replicas' notices.
///
/// Guarantee: a refresh token is presented only after the refresh machine recorded the attempt
/// (committed before the call); it is never presented again while that attempt stands. The IdP
/// is waited for up to `patience`, whoever else stopped waiting.
public final class RefreshDriver: Sendable {
    /// Why a flight ended with a session: refreshed by this flight, or found fresh.
    public typealias FlightResult = Result<(session: Session, refreshed: Bool), BrokerError>

    let store: any SessionStore
    let registry: RegistryCache
    let endpoint: any TokenEndpoint
    let audit: any AuditSink
    let feed: any ChangeFeed
    let clock: any Clock
    let executor: BlockingExecutor
    let cache: SessionCache
    public let metrics: TokenMetrics
    let flights = SingleFlight<SessionKey, FlightResult>()
    /// How long a caller queues for a session's lock.
    let lockTimeout: TimeInterval
    let retry: RetryPolicy
    /// How long a sent refresh request is waited for, independently of callers.
    let patience: TimeInterval
    let jitter: @Sendable () -> Double
    public let events: @Sendable (LogLine) -> Void
    public let circuits: ClientCircuits
    let pending = PendingAnswers()
    let notices = SessionNotices()
    /// Checks ID tokens that come back with a refresh (OIDC Core §12.2); nil in unit tests
    /// whose IdP returns none.
    let idTokens: JWTVerifier?
    /// The sessions' DPoP keys (nil without DPoP sessions).
    let dpopKeys: DPoPKeys?
    /// What a failover may lose and this replica re-applies (nil: not kept, in unit tests).
    public let failover: FailoverGuard?

    public init(store: any SessionStore, registry: RegistryCache, endpoint: any TokenEndpoint, audit: any AuditSink,
                feed: any ChangeFeed, clock: any Clock, executor: BlockingExecutor, cache: SessionCache,
                idTokens: JWTVerifier? = nil, dpopKeys: DPoPKeys? = nil, failover: FailoverGuard? = nil, lockTimeout: TimeInterval = 10, retry: RetryPolicy = RetryPolicy(),
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
        self.metrics = TokenMetrics()
        self.lockTimeout = lockTimeout
        self.retry = retry
        self.patience = patience
        self.jitter = jitter
        self.events = events
        self.circuits = ClientCircuits(retry: retry)
        self.idTokens = idTokens
        self.dpopKeys = dpopKeys
        self.failover = failover
        failover?.onChange { [weak self] epoch in self?.reapplyInBackground(epoch: epoch) }
    }

    /// IdP answers waiting for the database, for metrics.
    public var pendingAnswers: Int { pending.count }

    /// A caller needs `session` refreshed to `need` (decided on the copy it holds, at `version`
    /// seen there): joins the session's flight, or leads one on the executor. `then` runs once,
    /// when the flight ends, on the thread that ends it.
    func refresh(_ session: Session, client: ClientRegistration, need: TokenRequirement, actor: String,
                 then: @escaping @Sendable (FlightResult) -> Void) {
        let key = SessionKey(tenant: session.tenant, id: session.id)
        guard flights.join(key, then) else { return }
        let trigger = RefreshTrigger.demand(seenVersion: session.version, need: need)
        executor.submit { [self] in
            flights.finish(key, fly(key, client, trigger, actor: actor).result)
        }
    }

    /// Runs a due session's refresh on the calling (engine worker) thread, sharing the flight
    /// with any on-demand request for it, and says when the session is next due (nil: never).
    /// `read`: the row as read with its tick's others, if it was.
    public func refreshDue(_ key: SessionKey, client clientID: String, read: DueRow? = nil) -> DueOutcome {
        let done = DispatchSemaphore(value: 0)
        let joined = ResultBox()
        if flights.join(key, { joined.set($0); done.signal() }) {
            let end: (result: FlightResult, retryAt: Date?)
            do {
                guard let client = try registry.client(tenant: key.tenant, id: clientID, now: clock.now()) else { throw BrokerError.notFound("client") }
                end = fly(key, client, .due, actor: "engine", read: read)
            } catch {
                end = (.failure(brokerError(error, key)), nil)
            }
            flights.finish(key, end.result)
            done.wait()
            switch end.result {
            case .success(let (s, _)): return .next(s.state == .active ? s.nextRefreshAt : nil)
            case .failure(.refreshBusy): return end.retryAt.map { .next($0) } ?? .busy
            case .failure(.sessionNotActive), .failure(.notFound): return .next(nil)
            case .failure: return .next(end.retryAt ?? clock.now().addingTimeInterval(retry.cap))
            }
        }
        done.wait()
        // Joined someone else's flight: its row is now the truth.
        if case .success(let (s, _)) = joined.get() { return .next(s.state == .active ? s.nextRefreshAt : nil) }
        return .busy
    }

    /// Writes the answers kept in memory (called periodically); returns how many are left.
    @discardableResult
    public func retryPendingAnswers() -> Int {
        for a in pending.all() {
            guard pending.take(a.key) != nil else { continue }
            let f = complete(a)
            if case .failure(.storeUnavailable) = f.result { continue }
            let resolved = f.next == .resolve ? resolve(a.key, a.client, a.attempt, token: a.presented) : f
            conclude(a.key, a.client, RefreshFlight.ending(resolved), actor: "engine")
        }
        return pending.count
    }

    /// A change notice for `key` arrived: flights waiting for another replica's attempt look again.
    func noticed(_ key: SessionKey) { notices.signal(key) }

    final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value: FlightResult?
        func set(_ v: FlightResult) { lock.withLock { value = v } }
        func get() -> FlightResult? { lock.withLock { value } }
    }
}
