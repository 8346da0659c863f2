import Broker
import BrokerCore
import BrokerCrypto
import BrokerHTTP
import BrokerOIDC
import Foundation

/// BrokerConfig is everything the broker reads at start, from environment variables and/or a
/// file of `NAME=value` lines (`--config FILE` or TOKENBROKER_CONFIG; the environment wins).
/// Every value is validated before anything starts; errors name the variable, never a secret.
public struct BrokerConfig: Sendable {
    public var databaseURL: String
    /// Where LISTEN runs: a direct connection (session state), also when `databaseURL` is a
    /// transaction pooler. Defaults to `databaseURL`.
    public var listenDatabaseURL: String
    /// The internal listener (TOKENBROKER_LISTEN): the template of every listener's limits.
    public var http: HTTPServerConfig
    /// Every address served, with its audiences and TLS (one, unless audiences are split).
    public var listeners: [Listener]
    /// Nil for commands that seal nothing (migrate, tenant, apikey).
    public var sealingKeys: SealingKeys?
    public var workerThreads: Int
    public var databasePoolSize: Int
    /// Hot statements prepared once per connection; off behind a transaction pooler that does
    /// not carry prepared statements (PgBouncer before 1.21).
    public var databasePreparedStatements: Bool
    public var cacheMaxAge: TimeInterval
    public var cacheCapacity: Int
    public var lockTimeout: TimeInterval
    public var idpTimeout: TimeInterval
    /// Provider connections: the CA file trusted (TOKENBROKER_PROVIDER_CA_FILE) and the idle
    /// connections kept.
    public var providerConnections = HTTPConnectionSettings()
    /// How long a sent refresh request is waited for, whatever the caller's deadline.
    public var refreshPatience: TimeInterval
    public var refresh: RefreshEngine.Config
    /// What each replica keeps of its recent refresh writes, to re-apply them after a failover
    /// that lost them (TOKENBROKER_FAILOVER_JOURNAL_*), and how long refreshes are held after
    /// a change of database server (TOKENBROKER_FAILOVER_HOLD_SECONDS).
    public var failoverJournal = RotationJournalLimits()
    public var failoverHold: TimeInterval = 5
    public var refreshConcurrency: Int
    /// Bulk sign-out: sessions revoked per second and client, per replica (0: unlimited).
    public var signoutRatePerClient: Int
    /// Bulk sign-out: how long a replica keeps the batch it claimed (a dead replica's items come back after it).
    public var signoutLease: TimeInterval
    /// How old each kind of row may get before retention deletes it (a kind not here is kept).
    public var retention: [RetentionKind: TimeInterval]
    public var accessLog: Bool
    public var logLevel: LogLevel
    public var migrationsDirectory: URL?
    /// The shipped provider catalogue (TOKENBROKER_CATALOGUE_DIR; nil: providers/ found as sql/ is)
    /// and the operator's own descriptors (TOKENBROKER_PROVIDERS_DIR), whose entries win.
    public var catalogueDirectory: URL?
    public var providersDirectory: URL?
    /// Webhook endpoints may be plain http:// (development, tests); otherwise https:// only.
    public var webhookAllowHTTP = false
    /// Webhook deliveries may connect to loopback, private and link-local addresses (development, tests).
    public var webhookAllowPrivateNetworks = false
    /// The longest wait between two attempts of a webhook delivery (exponential backoff from 1 s).
    public var webhookRetryCap: TimeInterval = 600
    /// The broker's issuer identifier (TOKENBROKER_ISSUER): `iss` of its actor tokens, with its
    /// keys at `<issuer>/.well-known/jwks.json` on the public listener. Defaults to http:// and
    /// the public listener's address (https:// when it has TLS).
    public var issuer: String = ""
    /// The outbound proxy's threads, queue, timeouts and body limits (TOKENBROKER_PROXY_*).
    public var proxy = ProxyLimits()

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads and validates. `env` is the process environment merged over the config file.
    public static func load(_ env: [String: String], needsSealingKeys: Bool = true) throws -> BrokerConfig {
        func value(_ k: String) -> String? { env[k].flatMap { $0.isEmpty ? nil : $0 } }
        func int(_ k: String, _ d: Int, _ range: ClosedRange<Int>) throws -> Int {
            guard let v = value(k) else { return d }
            guard let n = Int(v), range.contains(n) else { throw Invalid(description: "\(k) must be an integer in \(range.lowerBound)...\(range.upperBound)") }
            return n
        }
        func bool(_ k: String, _ d: Bool) throws -> Bool {
            guard let v = value(k)?.lowercased() else { return d }
            switch v {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default: throw Invalid(description: "\(k) must be true or false")
            }
        }
        guard let db = value("TOKENBROKER_DATABASE_URL") ?? value("DATABASE_URL") else {
            throw Invalid(description: "DATABASE_URL (or TOKENBROKER_DATABASE_URL) is not set")
        }
        try ConnectionString.check(db, variable: value("TOKENBROKER_DATABASE_URL") != nil ? "TOKENBROKER_DATABASE_URL" : "DATABASE_URL")
        if let listenDB = value("TOKENBROKER_LISTEN_DATABASE_URL") { try ConnectionString.check(listenDB, variable: "TOKENBROKER_LISTEN_DATABASE_URL") }
        var keysText: String?
        if let k = value("TOKENBROKER_SEALING_KEYS") {
            keysText = k
        } else if let f = value("TOKENBROKER_SEALING_KEY_FILE") {
            guard let t = try? String(contentsOfFile: f, encoding: .utf8) else {
                throw Invalid(description: "TOKENBROKER_SEALING_KEY_FILE: cannot read \(f)")
            }
            keysText = t
        } else if needsSealingKeys {
            throw Invalid(description: "no sealing key: set TOKENBROKER_SEALING_KEYS or TOKENBROKER_SEALING_KEY_FILE (generate one with `tokenbroker sealing-key generate`)")
        }
        var keys: SealingKeys?
        if let keysText {
            do { keys = try SealingKeys.parse(keysText) } catch { throw Invalid(description: "sealing keys: \(error.reason)") }
        }

        // Four HTTP threads a core (at most 64): a thread descheduled (by the load beside it)
        // holds up fewer connections. With the hand-out's lookups no longer waiting for each
        // other (ReadMostly) and no convoy on the DPoP signing contexts (PlainMutex), 8 threads
        // on 2 cores cost about the CPU a hand-out 2 do, with a shorter tail (docs/benchmarks.md).
        let httpThreads = try int("TOKENBROKER_HTTP_THREADS", min(64, 4 * max(1, ProcessInfo.processInfo.activeProcessorCount)), 1...256)
        let workers = try int("TOKENBROKER_WORKER_THREADS", 32, 1...1024)
        var http = HTTPServerConfig(host: "127.0.0.1", port: 8080, threads: httpThreads)
        http.maxBodyBytes = try int("TOKENBROKER_MAX_BODY_BYTES", 256 * 1024, 1024...(16 << 20))
        http.maxHeaderBytes = try int("TOKENBROKER_MAX_HEADER_BYTES", 16 * 1024, 4096...(1 << 20))
        http.idleTimeout = try int("TOKENBROKER_IDLE_TIMEOUT_SECONDS", 30, 1...3600)
        http.headerTimeout = Double(try int("TOKENBROKER_HEADER_TIMEOUT_SECONDS", 10, 1...300))
        http.bodyTimeout = Double(try int("TOKENBROKER_BODY_TIMEOUT_SECONDS", 30, 1...3600))
        http.maxConnectionsPerClient = try int("TOKENBROKER_MAX_CONNECTIONS_PER_CLIENT", 256, 0...100_000)
        let listeners = try Listener.load(value, template: http)
        http = listeners[0].http
        let level = value("TOKENBROKER_LOG_LEVEL").map { $0.lowercased() } ?? "info"
        guard let logLevel = LogLevel(rawValue: level) else {
            throw Invalid(description: "TOKENBROKER_LOG_LEVEL must be debug, info, warn or error")
        }
        var refresh = RefreshEngine.Config()
        refresh.tick = Double(try int("TOKENBROKER_REFRESH_TICK_MS", 100, 10...1000)) / 1000
        refresh.horizon = TimeInterval(try int("TOKENBROKER_REFRESH_HORIZON_SECONDS", 120, 10...86_400))
        refresh.spread = Double(try int("TOKENBROKER_REFRESH_SPREAD_MS", 500, 0...60_000)) / 1000
        refresh.loadInterval = TimeInterval(try int("TOKENBROKER_REFRESH_LOAD_SECONDS", 30, 1...3600))
        guard refresh.loadInterval < refresh.horizon else {
            throw Invalid(description: "TOKENBROKER_REFRESH_LOAD_SECONDS must be shorter than TOKENBROKER_REFRESH_HORIZON_SECONDS")
        }
        var retention: [RetentionKind: TimeInterval] = [:]
        for (kind, name, days) in [(RetentionKind.auditEvents, "TOKENBROKER_RETENTION_AUDIT_DAYS", 90),
                                   (.endedSessions, "TOKENBROKER_RETENTION_SESSION_DAYS", 30),
                                   (.finishedSignouts, "TOKENBROKER_RETENTION_SIGNOUT_DAYS", 30),
                                   (.webhookEvents, "TOKENBROKER_RETENTION_WEBHOOK_DAYS", 30),
                                   (.expiredAppTokens, "TOKENBROKER_RETENTION_APP_TOKEN_DAYS", 1)] {
            let d = try int(name, days, 0...36_500)
            if d > 0 { retention[kind] = TimeInterval(d) * 86_400 }
        }
        var providers = HTTPConnectionSettings(caFile: value("TOKENBROKER_PROVIDER_CA_FILE"))
        if let f = providers.caFile, HTTPConnectionSettings.certificates(inBundle: f) == nil {
            throw Invalid(description: "TOKENBROKER_PROVIDER_CA_FILE: \(f) cannot be read or holds no PEM certificate")
        }
        providers.keepAlive = TimeInterval(try int("TOKENBROKER_PROVIDER_KEEPALIVE_SECONDS", 120, 1...3600))
        providers.idlePerHost = try int("TOKENBROKER_PROVIDER_IDLE_CONNECTIONS_PER_HOST", 8, 1...256)
        providers.idleTotal = try int("TOKENBROKER_PROVIDER_IDLE_CONNECTIONS", 2048, 1...100_000)
        var config = BrokerConfig(
            databaseURL: db, listenDatabaseURL: value("TOKENBROKER_LISTEN_DATABASE_URL") ?? db, http: http, listeners: listeners, sealingKeys: keys, workerThreads: workers,
            databasePoolSize: try int("TOKENBROKER_DB_POOL_SIZE", workers + httpThreads + 16 + 4, 1...1024),
            databasePreparedStatements: try bool("TOKENBROKER_DB_PREPARED_STATEMENTS", true),
            cacheMaxAge: TimeInterval(try int("TOKENBROKER_CACHE_MAX_AGE_SECONDS", 30, 0...3600)),
            cacheCapacity: try int("TOKENBROKER_CACHE_CAPACITY", 200_000, 100...10_000_000),
            lockTimeout: TimeInterval(try int("TOKENBROKER_LOCK_TIMEOUT_SECONDS", 10, 1...120)),
            idpTimeout: TimeInterval(try int("TOKENBROKER_IDP_TIMEOUT_SECONDS", 10, 1...120)),
            refreshPatience: TimeInterval(try int("TOKENBROKER_REFRESH_PATIENCE_SECONDS", 120, 2...3600)),
            refresh: refresh, refreshConcurrency: try int("TOKENBROKER_REFRESH_CONCURRENCY", 16, 1...512),
            signoutRatePerClient: try int("TOKENBROKER_SIGNOUT_RATE_PER_CLIENT", 50, 0...100_000),
            signoutLease: TimeInterval(try int("TOKENBROKER_SIGNOUT_LEASE_SECONDS", 30, 2...3600)),
            retention: retention, accessLog: try bool("TOKENBROKER_ACCESS_LOG", false), logLevel: logLevel,
            migrationsDirectory: value("TOKENBROKER_SQL_DIR").map { URL(fileURLWithPath: $0) },
            webhookAllowHTTP: try bool("TOKENBROKER_WEBHOOK_ALLOW_HTTP", false),
            webhookAllowPrivateNetworks: try bool("TOKENBROKER_WEBHOOK_ALLOW_PRIVATE_NETWORKS", false),
            webhookRetryCap: TimeInterval(try int("TOKENBROKER_WEBHOOK_RETRY_CAP_SECONDS", 600, 1...86_400)),
            issuer: try issuerValue(value("TOKENBROKER_ISSUER"), listeners))
        config.providerConnections = providers
        config.failoverJournal = RotationJournalLimits(
            maxAge: TimeInterval(try int("TOKENBROKER_FAILOVER_JOURNAL_SECONDS", 300, 0...86_400)),
            maxEntries: try int("TOKENBROKER_FAILOVER_JOURNAL_MAX_ENTRIES", 50_000, 0...10_000_000),
            maxBytes: try int("TOKENBROKER_FAILOVER_JOURNAL_MAX_BYTES", 64 << 20, 0...(1 << 40)))
        config.failoverHold = TimeInterval(try int("TOKENBROKER_FAILOVER_HOLD_SECONDS", 5, 0...600))
        config.proxy.workers = try int("TOKENBROKER_PROXY_WORKERS", 64, 1...4096)
        config.proxy.queue = try int("TOKENBROKER_PROXY_QUEUE", 256, 0...1_000_000)
        config.proxy.connectTimeout = Double(try int("TOKENBROKER_PROXY_CONNECT_TIMEOUT_SECONDS", 5, 1...120))
        config.proxy.totalTimeout = Double(try int("TOKENBROKER_PROXY_TIMEOUT_SECONDS", 300, 1...86_400))
        config.proxy.maxRequestBytes = try int("TOKENBROKER_PROXY_MAX_REQUEST_BYTES", 100 << 20, 0...(1 << 40))
        config.proxy.maxResponseBytes = try int("TOKENBROKER_PROXY_MAX_RESPONSE_BYTES", 4 << 30, 0...(1 << 50))
        config.proxy.replayBytes = try int("TOKENBROKER_PROXY_REPLAY_BYTES", 64 << 10, 0...(16 << 20))
        for (name, keyPath) in [("TOKENBROKER_CATALOGUE_DIR", \BrokerConfig.catalogueDirectory), ("TOKENBROKER_PROVIDERS_DIR", \BrokerConfig.providersDirectory)] {
            guard let dir = value(name) else { continue }
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
                throw Invalid(description: "\(name): \(dir) is not a readable folder")
            }
            config[keyPath: keyPath] = URL(fileURLWithPath: dir)
        }
        return config
    }

    /// TOKENBROKER_ISSUER checked (an absolute http(s) URL without query or fragment), or the
    /// public listener's address.
    static func issuerValue(_ given: String?, _ listeners: [Listener]) throws -> String {
        guard let given else {
            let l = listeners.first { $0.audiences.contains(.public) } ?? listeners[0]
            return (l.http.tls == nil ? "http://" : "https://") + l.address
        }
        guard let u = URLComponents(string: given), u.scheme == "https" || u.scheme == "http", u.host?.isEmpty == false,
              u.query == nil, u.fragment == nil, !given.hasSuffix("/") else {
            throw Invalid(description: "TOKENBROKER_ISSUER must be an http(s) URL without query, fragment or trailing slash")
        }
        return given
    }

    /// The environment merged over the file named by `--config` / TOKENBROKER_CONFIG, if any.
    public static func environment(configFile: String?) throws -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        guard let path = configFile ?? env["TOKENBROKER_CONFIG"] else { return env }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Invalid(description: "config file \(path) cannot be read")
        }
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let l = line.trimmingCharacters(in: .whitespaces)
            if l.isEmpty || l.hasPrefix("#") { continue }
            guard let eq = l.firstIndex(of: "=") else { throw Invalid(description: "\(path):\(n + 1): expected NAME=value") }
            let k = String(l[..<eq]).trimmingCharacters(in: .whitespaces)
            if env[k] == nil { env[k] = String(l[l.index(after: eq)...]).trimmingCharacters(in: .whitespaces) }
        }
        return env
    }
}
