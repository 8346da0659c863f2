import Broker
import BrokerCore
import BrokerCrypto
import BrokerOIDC
import BrokerPostgres
import Foundation

/// BrokerRuntime is the composition root: it builds every adapter from the configuration and
/// wires them into the services. Nothing else constructs an adapter.
public final class BrokerRuntime: Sendable {
    public let config: BrokerConfig
    public let logger: Logger
    public let clock: any Clock
    public let pool: PGPool
    let registryStore: PostgresRegistryStore
    public let registry: RegistryCache
    let sessions: PostgresSessionStore
    let audit: PostgresAuditSink
    let feed: PostgresChangeFeed
    /// Whether the caches may serve what they hold: not while the change feed is found dead.
    public let cacheTrust = CacheTrust()
    let executor: BlockingExecutor
    /// Issuers' JWK Sets (their fetches are a metric).
    public let jwks: JWKSCache
    /// Every call to a provider (IdP): its connections, TLS sessions and trust.
    public let providerHTTP: BlockingHTTP
    /// Request durations by route and status class.
    public let requests = RequestMetrics()
    public let tokens: TokenService
    /// App tokens (client credentials), shared by every replica.
    public let appTokens: AppTokenService
    /// The outbound proxy: workers' API calls sent on with the broker's credentials.
    public let proxy: ProxyService
    /// Refresh flights, for the token service and the timer engine alike.
    public let refresher: RefreshDriver
    /// Delegated tokens (RFC 8693), and the broker's own keys that sign their actor tokens.
    public let exchanges: ExchangeService
    public let actors: ActorTokens
    public let auth: Authenticator
    public let operators: OperatorService
    public let admin: SessionAdmin
    public let logins: LoginService
    public let revocations: RevocationService
    public let signouts: SignoutService
    public let backchannel: BackchannelLogoutService
    let replays: PostgresReplayGuard
    public let engine: RefreshEngine
    /// Sealed values by key, and re-sealing under the current key (`tokenbroker sealing-key`).
    public let sealing: ResealService
    /// Deletes rows past their age: once a minute here, or `tokenbroker purge`.
    public let retention: RetentionService
    /// Tenants' webhook endpoints and the delivery of their events.
    public let webhooks: WebhookService
    /// The outbox and sign-outs still to do, counted every 15 s (metrics).
    public let backlog: BacklogGauge
    /// The primary's replication mode: whether a failover can lose acknowledged commits.
    public let replication: ReplicationMonitor
    /// The database server this replica is on, and what it re-applies after a failover.
    public let failover: FailoverGuard
    /// The background loops' failures, logged once per outage (not once per pass).
    public let outages: OutageLog
    let migrator: Migrator
    /// Clients' DPoP nonces at their authorization servers, forgotten as the change feed says.
    let serverNonces: ServerNonces

    public init(config: BrokerConfig, logger: Logger, clock: any Clock = SystemClock()) throws {
        self.config = config
        self.logger = logger
        self.clock = clock
        outages = OutageLog(clock: clock, isOutage: Self.isStoreOutage) { event, fields in
            logger.with(("code", event.code)).write(LogLevel(rawValue: event.level.rawValue) ?? .warn, event.message, fields)
        }
        let sealer: any Sealer = config.sealingKeys.map { AESGCMSealer(keys: $0) } ?? MissingSealer()
        // Every connection reads which server it is on before it is used: a change of server
        // holds refreshes until this replica re-applied what the old one may have lost.
        let failover = FailoverGuard(sealer: sealer, clock: clock, limits: config.failoverJournal, hold: config.failoverHold,
                                     proofWindow: config.failoverProofWindow, events: Self.eventLog(logger))
        self.failover = failover
        pool = PGPool(url: config.databaseURL, size: config.databasePoolSize, prepares: config.databasePreparedStatements, notices: { notice in
            // libpq's "WARNING:  …" / "NOTICE:  …" lines, as JSON log lines instead of raw stderr.
            let text = notice.trimmingCharacters(in: .whitespacesAndNewlines)
            text.hasPrefix("WARNING") ? logger.warn("postgresql notice", ("notice", text)) : logger.info("postgresql notice", ("notice", text))
        }, preparesTurnedOff: { error in
            logger.warn("PostgreSQL answered as through a transaction pooler that does not keep prepared statements: they are off on this replica "
                            + "until it restarts; set TOKENBROKER_DB_PREPARED_STATEMENTS=false", ("code", "prepared_statements_off"),
                        ("error", String(describing: error)))
        }, identities: { failover.observed($0) })
        // Before each refresh token is presented: which server its start was written on.
        failover.confirmWith { [pool] in try pool.probeIdentity() }
        registryStore = PostgresRegistryStore(pool: pool, sealer: sealer)
        sessions = PostgresSessionStore(pool: pool, sealer: sealer)
        audit = PostgresAuditSink(pool: pool)
        let trust = cacheTrust
        feed = PostgresChangeFeed(pool: pool, listenURL: config.listenDatabaseURL, publishFailed: { [logger] change, error in
            // Ids only (the notice's payload), never a token; other replicas catch up by cache age.
            logger.warn("change_notice_unsent", ("change", String(describing: change)), ("error", String(describing: error)))
        }, verdicts: { [logger] verdict in
            switch verdict {
            case .died(let waited):
                // Changes other replicas make no longer reach this one: every read goes to the
                // database until the feed delivers again.
                trust.set(false)
                logger.error("the change feed delivers nothing: a canary sent to this replica did not come back; cached sessions, "
                                 + "clients and keys are not served until it does (is TOKENBROKER_LISTEN_DATABASE_URL a transaction pooler?)",
                             ("code", "change_feed_dead"), ("seconds", String(format: "%.1f", waited)))
            case .unproven:
                // Notices sent while it was away are lost (the caches were dropped); until a
                // canary comes back through the new connection, reads go to the database.
                trust.set(false)
                logger.info("the change feed listens again on a new connection; caches are trusted once a canary comes back",
                            ("code", "change_feed_reconnected"))
            case .recovered:
                trust.set(true)
                logger.info("the change feed delivers again; caches are trusted again", ("code", "change_feed_alive"))
            }
        }, identities: { failover.observed($0) })
        executor = BlockingExecutor(threads: config.workerThreads, name: "broker-worker")
        let http = BlockingHTTP(timeout: config.idpTimeout, settings: config.providerConnections)
        providerHTTP = http
        let registry = RegistryCache(store: registryStore, maxAge: config.cacheMaxAge, trust: trust)
        self.registry = registry
        let digest = OpenSSLDigest()
        let directory = IssuerMetadataCache(http: http)
        let assertionKeys = AssertionKeys(registry: registry, digest: digest, keys: OpenSSLPrivateKeys())
        // One DPoP nonce per client at its authorization server, shared by the fleet.
        let nonces = ServerNonces(store: PostgresDPoPNonceStore(pool: pool), feed: feed)
        serverNonces = nonces
        let endpoint = OIDCTokenEndpoint(http: http, metadata: directory, clock: clock, assertions: assertionKeys, nonces: nonces,
                                         certificate: { try registry.clientCertificate(tenant: $0.tenant, id: $0.id, now: clock.now()) }) { client in
            try registry.clientSecret(tenant: client.tenant, id: client.id, now: clock.now())
        }
        jwks = JWKSCache(http: http, directory: directory)
        let idTokens = JWTVerifier(keys: jwks, signatures: OpenSSLSignatureVerifier())
        let dpopKeys = DPoPKeys(keys: OpenSSLPrivateKeys(), digest: digest)
        let cache = SessionCache(maxAge: config.cacheMaxAge, capacity: config.cacheCapacity, trust: trust)
        refresher = RefreshDriver(store: sessions, registry: registry, endpoint: endpoint, audit: audit, feed: feed, clock: clock,
                                  executor: executor, cache: cache, idTokens: idTokens, dpopKeys: dpopKeys, failover: failover,
                                  lockTimeout: config.lockTimeout,
                                  patience: config.refreshPatience, events: Self.eventLog(logger))
        tokens = TokenService(store: sessions, registry: registry, audit: audit, clock: clock, executor: executor, cache: cache,
                              refresher: refresher, dpopKeys: dpopKeys, lockTimeout: config.lockTimeout)
        appTokens = AppTokenService(store: PostgresAppTokenStore(pool: pool, sealer: sealer), registry: registry, endpoint: endpoint,
                                    dpopKeys: dpopKeys, audit: audit, clock: clock, lockTimeout: config.lockTimeout)
        // Upstream connections trust what provider connections do (TOKENBROKER_PROVIDER_CA_FILE),
        // and keep as many idle connections to one upstream as calls may run at once: fewer
        // would close and reopen connections under steady load.
        var upstreams = config.providerConnections
        upstreams.idlePerHost = max(upstreams.idlePerHost, config.proxy.workers)
        upstreams.idleTotal = max(upstreams.idleTotal, config.proxy.workers)
        proxy = ProxyService(tokens: tokens, appTokens: appTokens, registry: registry,
                             transport: CurlUpstreamTransport(settings: upstreams), audit: audit, clock: clock, limits: config.proxy)
        actors = ActorTokens(store: PostgresBrokerKeyStore(pool: pool, sealer: sealer), keys: OpenSSLPrivateKeys(), digest: digest, clock: clock,
                             issuer: config.issuer)
        exchanges = ExchangeService(tokens: tokens, registry: registry, endpoint: endpoint, actors: actors, dpopKeys: dpopKeys, audit: audit,
                                    clock: clock, executor: executor, events: Self.eventLog(logger))
        let hasher = SHA256SecretHasher()
        auth = Authenticator(store: registryStore, hasher: hasher, maxAge: config.cacheMaxAge, trust: trust)
        let catalogue = try ProviderCatalogue.load([config.catalogueDirectory ?? Self.findCatalogue()].filter {
            FileManager.default.fileExists(atPath: $0.path)
        } + (config.providersDirectory.map { [$0] } ?? []))
        operators = OperatorService(store: registryStore, hasher: hasher, feed: feed, audit: audit, clock: clock, assertionKeys: assertionKeys,
                                    directory: directory, anchors: OpenSSLTrustAnchors(), auth: auth, catalogue: catalogue,
                                    certificates: OpenSSLClientCertificates())
        revocations = RevocationService(store: sessions, registry: registry, endpoint: endpoint, tokens: tokens, audit: audit, clock: clock,
                                        lockTimeout: config.lockTimeout, events: Self.eventLog(logger))
        let flushBuffers = Self.flusher(audit: audit, tokens: tokens, appTokens: appTokens, sessions: sessions, auth: auth,
                                        registryStore: registryStore, clock: clock, outages: outages)
        admin = SessionAdmin(store: sessions, catalog: sessions, auditLog: audit, registry: registry, revocations: revocations, tokens: tokens,
                             feed: feed, audit: audit, clock: clock, flush: flushBuffers, events: Self.eventLog(logger))
        signouts = SignoutService(store: PostgresSignoutStore(pool: pool), revocations: revocations, registry: registry, audit: audit,
                                  clock: clock, ratePerClient: Double(config.signoutRatePerClient), lease: config.signoutLease)
        replays = PostgresReplayGuard(pool: pool)
        backchannel = BackchannelLogoutService(verifier: idTokens, replays: replays, catalog: sessions, revocations: revocations,
                                               registry: registry, audit: audit, clock: clock, events: Self.eventLog(logger))
        logins = LoginService(logins: PostgresLoginStore(pool: pool, sealer: sealer), sessions: sessions, registry: registry,
                              directory: directory, endpoint: endpoint, idTokens: idTokens, digest: digest, feed: feed, audit: audit,
                              clock: clock, dpopKeys: dpopKeys, events: Self.eventLog(logger))
        sealing = ResealService(store: PostgresSealedValues(pool: pool, sealer: sealer), current: sealer.sealingKeyID)
        retention = RetentionService(store: PostgresRetentionStore(pool: pool), registry: registryStore, clock: clock, ages: config.retention)
        engine = RefreshEngine(config: config.refresh, refresher: refresher, store: sessions, registry: registry, clock: clock,
                               pool: RefreshPool(globalCap: config.refreshConcurrency), outages: outages)
        backlog = BacklogGauge(store: PostgresBacklogStore(pool: pool))
        replication = ReplicationMonitor(probe: PostgresReplicationProbe(pool: pool), report: Self.replicationLog(logger))
        webhooks = WebhookService(store: PostgresWebhookStore(pool: pool, sealer: sealer), registry: registry,
                                  sender: HTTPWebhookSender(http: BlockingHTTP(timeout: 10), allowPrivateNetworks: config.webhookAllowPrivateNetworks), mac: { try HMACSHA256.mac(key: $0, $1) },
                                  audit: audit, clock: clock, allowHTTP: config.webhookAllowHTTP,
                                  retry: RetryPolicy(base: 1, cap: config.webhookRetryCap), events: Self.eventLog(logger))
        migrator = try Migrator(directory: config.migrationsDirectory ?? Self.findMigrations())
    }

    /// Whether a loop's error means the database is unavailable (every loop then shares one
    /// outage in the log) rather than a fault of that loop's own.
    @Sendable static func isStoreOutage(_ error: any Error) -> Bool {
        if let e = error as? PGError { return e.isConnectionError || e.sqlstate == "08001" }
        if case .storeUnavailable? = error as? BrokerError { return true }
        return false
    }

    /// Whether the change feed delivers (its canaries come back).
    public var feedAlive: Bool { feed.isAlive }

    /// Applies pending migrations; returns the versions applied. A second connection renews
    /// the migration lease while a long statement (an index built concurrently) runs.
    public func migrate() throws -> [Int] {
        let c = try pool.dedicated()
        return try migrator.migrate(c, connect: { [pool] () throws(PGError) in try pool.dedicated() })
    }

    /// The versions applied, and those in sql/ not applied yet.
    public func migrationStatus() throws -> (applied: [Int], pending: [Int]) {
        let pending = try pendingMigrations()
        return (migrator.migrations.map(\.version).filter { !pending.contains($0) }, pending)
    }

    /// Versions in sql/ not yet applied (empty when the schema is current).
    public func pendingMigrations() throws -> [Int] {
        try pool.withConnection { try migrator.pending($0) }
    }

    /// The services of a serving broker in the order they depend on one another, the listeners
    /// last, all in one stage (they drain together); `Serve` starts them and stops them in
    /// reverse: the listeners drain, the engine stops (running refreshes finish), the loops end
    /// (a running pass finishes), queued work runs, the feed stops.
    func services(listeners: [ListenerService]) -> ServiceGroup {
        let tokens = self.tokens, registry = self.registry, auth = self.auth, engine = self.engine, circuits = self.refresher.circuits
        let nonces = serverNonces
        let follower = ChangeFollower(feed: feed) { change in
            tokens.forget(change)
            nonces.forget(change)
            registry.forget(change)
            circuits.forget(change)
            auth.forget(change)
            engine.apply(change)
        }
        let log = logger
        let order: [[any Service]] = [[follower], [executor, proxy]] + Self.loops(self).map { [$0] } + [[engine], listeners]
        return ServiceGroup(stages: order) { event in
            switch event {
            case .started(let name): log.debug("service started", ("service", name))
            case .stopped(let name, let seconds): log.info("service stopped", ("service", name), ("ms", String(Int(seconds * 1000))))
            case .overran(let name, let seconds):
                log.warn("service still stopping at the shutdown deadline; not waited for", ("service", name), ("ms", String(Int(seconds * 1000))))
            }
        }
    }

    /// The longest a graceful shutdown may last, from the signal: the listeners' grace, then
    /// the refreshes their suspended requests wait for (up to the refresh patience). The unit
    /// file's TimeoutStopSec allows as much; a pod's terminationGracePeriodSeconds may cut it
    /// shorter (a replica killed then loses nothing: the others resolve its attempts).
    var shutdownBudget: TimeInterval { ListenerService.grace + config.refreshPatience }

    /// The background loops, each on a thread of its own so that a long pass never holds up
    /// another. A failed pass is tried again next time; the log says when a loop begins to fail
    /// and when it passes again (OutageLog: one database outage is one line, however many loops
    /// find it). Every pass but an idle flush reaches the database, so any loop's success
    /// proves it back; the flusher reports its own writes.
    private static func loops(_ rt: BrokerRuntime) -> [BackgroundLoop] {
        let outages = rt.outages
        func loop(_ name: String, every seconds: TimeInterval, first: TimeInterval? = nil, _ failure: String,
                  _ work: @escaping @Sendable () throws -> Bool) -> BackgroundLoop {
            BackgroundLoop(name, every: seconds, first: first, failed: { error in outages.failed(name, doing: failure, error) },
                           passed: { if name != "flush" { outages.passed(name) } }, work: work)
        }
        let flush = rt.flushBuffers, logins = rt.logins, replays = rt.replays, clock = rt.clock, retention = rt.retention
        let sealing = rt.sealing, revocations = rt.revocations, signouts = rt.signouts, backlog = rt.backlog
        let webhooks = rt.webhooks, refresher = rt.refresher, feed = rt.feed
        return [
            // The change feed's canary: this replica's own notice, sent and awaited (PostgresChangeFeed.probe).
            loop("feed-canary", every: PostgresChangeFeed.canaryPeriod, first: 0.1, "probing the change feed failed") { feed.probe(); return false },
            // Which server the pool is on, as new connections read it: behind a pooler that keeps
            // client connections through a failover, this is how the change is found.
            loop("server-identity", every: PostgresChangeFeed.canaryPeriod, first: 1, "reading the database server's identity failed") {
                [pool = rt.pool] in try pool.probeIdentity(); return false
            },
            // Audit events, last_used_at marks and key usage, four times a second.
            loop("flush", every: 0.25, "flushing failed") { flush(); return false },
            loop("housekeeper", every: 60, "purging expired logins or seen token ids failed; tried again in a minute") {
                _ = try logins.purgeExpired()
                try replays.purge(before: clock.now())
                return false
            },
            loop("retention", every: 60, "retention pass failed; tried again in a minute") { _ = try retention.run(); return false },
            // The fleet's count of sealed values (a scan of every sealed column): one replica
            // counts every ten minutes, every replica takes the count each minute.
            loop("sealed-count", every: 60, first: 1, "counting sealed values failed") {
                try sealing.follow(maxAge: 600, now: clock.now())
                return false
            },
            loop("backlog", every: 15, first: 1, "counting the backlog failed") { try backlog.count(); return false },
            // The primary's replication mode, logged when first known and when it changes.
            loop("replication", every: ReplicationMonitor.period, first: 0.2, "reading the replication mode failed") { [replication = rt.replication] in
                try replication.check()
                return false
            },
            // Revocations the IdP has not confirmed yet, from every replica's outbox share.
            loop("revoker", every: 1, "delivering revocations failed") { try revocations.deliverDue() > 0 },
            // IdP answers whose write the database did not take: written as soon as it is back.
            loop("pending-answers", every: 0.5, "writing kept IdP answers failed") { refresher.retryPendingAnswers(); return false },
            // Bulk sign-out items, shared with every replica through FOR UPDATE SKIP LOCKED.
            loop("signout", every: 0.5, "bulk sign-out pass failed") { try signouts.work() > 0 },
            // Webhook deliveries from the outbox every replica shares; grants nearing their end.
            loop("webhooks", every: 0.5, "delivering webhooks failed") { try webhooks.deliverDue() > 0 },
            loop("grant-expiring", every: 60, first: 1, "queueing grant-expiring webhooks failed") { try webhooks.queueGrantsExpiring() > 0 },
            // Client certificates nearing their end (30, 7, 1 days): once per certificate and threshold, whichever replica.
            loop("certificate-expiring", every: 15, first: 1, "queueing certificate-expiring webhooks failed") {
                try webhooks.queueCertificatesExpiring() > 0
            },
            // App tokens in use whose renewal instant comes before the next pass: granted again, once across replicas.
            loop("app-tokens", every: 1, "renewing app tokens failed") { [appTokens = rt.appTokens] in _ = try appTokens.renewDue(ahead: 1); return false },
        ]
    }

    /// Writes buffered audit events, last_used_at marks (sessions, app tokens) and key usage.
    public func flush() { flushBuffers() }

    private var flushBuffers: @Sendable () -> Void {
        Self.flusher(audit: audit, tokens: tokens, appTokens: appTokens, sessions: sessions, auth: auth, registryStore: registryStore, clock: clock,
                     outages: outages)
    }

    /// Writes the buffers; a failed write of marks is reported to `outages` as a failed pass of
    /// the loop "flush", a write that succeeded as a passed one (an idle flush reaches no
    /// database, so it proves nothing). The marks of a failed flush are lost: last_used_at is a
    /// hint, a later use marks it again.
    private static func flusher(audit: PostgresAuditSink, tokens: TokenService, appTokens: AppTokenService, sessions: PostgresSessionStore, auth: Authenticator,
                                registryStore: PostgresRegistryStore, clock: any Clock, outages: OutageLog) -> @Sendable () -> Void {
        { [clock] in
            audit.flush()
            // `body` answers whether it wrote anything (an empty buffer reaches no database).
            func write(_ what: String, _ body: () throws -> Bool) {
                do {
                    if try body() { outages.passed("flush") }
                } catch { outages.failed("flush", doing: what, error) }
            }
            let uses = tokens.usage.drain()
            if !uses.isEmpty { write("writing last_used_at failed") { try sessions.touch(uses); return true } }
            write("writing app tokens' last use failed") { try appTokens.flushUses() > 0 }
            let keys = auth.drainUsed()
            if !keys.isEmpty { write("writing API keys' last use failed") { try registryStore.touchAPIKeys(keys, at: clock.now()); return true } }
        }
    }

    /// One line per replication mode: INFO when commits wait for a synchronous standby, WARN
    /// otherwise (a failover may lose the last rotations). Names and settings only.
    static func replicationLog(_ logger: Logger) -> @Sendable (ReplicationWatch.Report) -> Void {
        { r in
            var fields: [(String, String)] = [("code", "db_replication_mode"), ("mode", r.mode.rawValue),
                                              ("synchronous_commit", r.reading.synchronousCommit),
                                              ("synchronous_standby_names", r.reading.synchronousStandbyNames),
                                              ("standbys", r.reading.standbys.map { "\($0.name ?? "?"):\($0.syncState ?? "?")" }.joined(separator: ","))]
            if let n = r.synchronousStandbys { fields.append(("synchronous_standbys", String(n))) }
            if let p = r.previous { fields.append(("previous_mode", p.rawValue)) }
            switch r.mode {
            case .synchronous: logger.write(.info, "sessions are stored on a primary whose commits wait for a synchronous standby", fields)
            case .synchronousUnavailable:
                logger.write(.warn, "the primary waits for a synchronous standby and none is connected: writes wait until one is", fields)
            case .asynchronous, .standalone, .unknown:
                logger.write(.warn, "sessions are stored on a primary without a synchronous standby: a failover may lose the last refresh-token rotations",
                             fields)
            }
        }
    }

    /// Writes the services' log lines: tenant, client, session and code as fields.
    static func eventLog(_ logger: Logger) -> @Sendable (LogLine) -> Void {
        { line in
            let e = line.event
            // Lines of no tenant or client (a failed load, a store error) do not carry empty ones.
            var l = logger.with(("code", e.code))
            if !line.tenant.isEmpty { l = l.with(("tenant", line.tenant)) }
            if !line.client.isEmpty { l = l.with(("client", line.client)) }
            if let s = line.session { l = l.with(("session_id", s)) }
            if let t = CurrentTrace.value { l = l.with(("trace_id", t.traceID), ("span_id", t.spanID)) }
            switch e.level {
            case .info: l.info(e.message)
            case .warn: l.warn(e.message)
            case .error: l.error(e.message)
            }
        }
    }

    /// sql/ next to the working directory, the installed copy, or the checkout of the binary.
    static func findMigrations() -> URL { findShared("sql", holding: "001_init.sql") }

    /// The shipped provider catalogue: providers/ found as sql/ is.
    static func findCatalogue() -> URL { findShared("providers", holding: "github.json") }

    /// `folder` next to the working directory, installed under /usr/share/tokenbroker, or in the
    /// checkout of the binary: the first that holds `file`.
    static func findShared(_ folder: String, holding file: String) -> URL {
        let fm = FileManager.default
        var candidates = [URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent(folder),
                          URL(fileURLWithPath: "/usr/share/tokenbroker/" + folder)]
        // No /proc: the other places are still tried, and a missing folder is reported by the caller.
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
            for _ in 0..<4 {
                dir = dir.deletingLastPathComponent()
                candidates.append(dir.appendingPathComponent(folder))
            }
        }
        return candidates.first { fm.fileExists(atPath: $0.appendingPathComponent(file).path) } ?? candidates[0]
    }
}
