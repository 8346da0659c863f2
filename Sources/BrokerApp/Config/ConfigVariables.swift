/// ConfigVariables lists every variable `serve` reads, with a line each, for `tokenbroker serve
/// --help`. docs/reference/configuration.md explains each; the docs check (`make test`) fails
/// when this list, that page and the variables the code reads differ.
enum ConfigVariables {
    static let all: [(name: String, summary: String)] = [
        ("DATABASE_URL", "PostgreSQL connection URL (required; or TOKENBROKER_DATABASE_URL)"),
        ("TOKENBROKER_DATABASE_URL", "the same, when DATABASE_URL is taken by something else"),
        ("TOKENBROKER_LISTEN_DATABASE_URL", "where the change feed LISTENs (default DATABASE_URL)"),
        ("TOKENBROKER_CONFIG", "a file of NAME=value lines (the environment wins)"),
        ("TOKENBROKER_SEALING_KEYS", "id:base64 sealing keys, comma-separated (or the next)"),
        ("TOKENBROKER_SEALING_KEY_FILE", "the same, from a file"),
        ("TOKENBROKER_LISTEN", "the internal listener, host:port (default 127.0.0.1:8080)"),
        ("TOKENBROKER_PUBLIC_LISTEN", "the public listener (callback, back-channel logout, JWKS)"),
        ("TOKENBROKER_OPS_LISTEN", "the ops listener (health, readiness, metrics)"),
        ("TOKENBROKER_TLS_CERT_FILE", "the internal listener's certificate chain (PEM)"),
        ("TOKENBROKER_TLS_KEY_FILE", "its private key (PEM)"),
        ("TOKENBROKER_PUBLIC_TLS_CERT_FILE", "the public listener's certificate chain"),
        ("TOKENBROKER_PUBLIC_TLS_KEY_FILE", "its private key"),
        ("TOKENBROKER_OPS_TLS_CERT_FILE", "the ops listener's certificate chain"),
        ("TOKENBROKER_OPS_TLS_KEY_FILE", "its private key"),
        ("TOKENBROKER_TLS_CLIENT_CA_FILE", "CA bundle for client certificates on the internal listener"),
        ("TOKENBROKER_TLS_CLIENT_CERT", "required or optional (default required)"),
        ("TOKENBROKER_HTTP_THREADS", "HTTP threads (default four a core, at most 64)"),
        ("TOKENBROKER_WORKER_THREADS", "threads for blocking work (default 32)"),
        ("TOKENBROKER_DB_POOL_SIZE", "PostgreSQL connections per replica"),
        ("TOKENBROKER_DB_PREPARED_STATEMENTS", "prepare hot statements (default true)"),
        ("TOKENBROKER_MAX_BODY_BYTES", "largest request body (default 262144)"),
        ("TOKENBROKER_MAX_HEADER_BYTES", "largest request line and headers (default 16384)"),
        ("TOKENBROKER_IDLE_TIMEOUT_SECONDS", "idle keep-alive connections closed after (default 30)"),
        ("TOKENBROKER_HEADER_TIMEOUT_SECONDS", "a request's headers must arrive within (default 10)"),
        ("TOKENBROKER_BODY_TIMEOUT_SECONDS", "its body within (default 30)"),
        ("TOKENBROKER_MAX_CONNECTIONS_PER_CLIENT", "connections per client address (default 256, 0 no cap)"),
        ("TOKENBROKER_CACHE_MAX_AGE_SECONDS", "longest a replica trusts cached rows (default 30)"),
        ("TOKENBROKER_CACHE_CAPACITY", "sessions held in memory (default 200000)"),
        ("TOKENBROKER_LOCK_TIMEOUT_SECONDS", "a token request's deadline for a refresh (default 10)"),
        ("TOKENBROKER_IDP_TIMEOUT_SECONDS", "IdP requests other than refreshes (default 10)"),
        ("TOKENBROKER_REFRESH_PATIENCE_SECONDS", "how long a sent refresh is waited for (default 120)"),
        ("TOKENBROKER_REFRESH_CONCURRENCY", "timer-driven refreshes at once (default 16)"),
        ("TOKENBROKER_REFRESH_HORIZON_SECONDS", "how far ahead the wheel holds due sessions (default 120)"),
        ("TOKENBROKER_REFRESH_LOAD_SECONDS", "how often it reloads them (default 30)"),
        ("TOKENBROKER_REFRESH_TICK_MS", "the wheel's tick (default 100)"),
        ("TOKENBROKER_REFRESH_SPREAD_MS", "random delay before a due session fires (default 500)"),
        ("TOKENBROKER_SIGNOUT_RATE_PER_CLIENT", "bulk sign-out revocations a second per client (default 50)"),
        ("TOKENBROKER_SIGNOUT_LEASE_SECONDS", "how long a replica keeps a claimed batch (default 30)"),
        ("TOKENBROKER_RETENTION_AUDIT_DAYS", "audit rows kept (default 90, 0 forever)"),
        ("TOKENBROKER_RETENTION_SESSION_DAYS", "ended sessions kept (default 30)"),
        ("TOKENBROKER_RETENTION_SIGNOUT_DAYS", "finished sign-out jobs kept (default 30)"),
        ("TOKENBROKER_RETENTION_WEBHOOK_DAYS", "delivered webhook events kept (default 30)"),
        ("TOKENBROKER_RETENTION_APP_TOKEN_DAYS", "app tokens unused since they expired kept (default 1)"),
        ("TOKENBROKER_WEBHOOK_ALLOW_HTTP", "webhook endpoints may be http:// (default false)"),
        ("TOKENBROKER_WEBHOOK_ALLOW_PRIVATE_NETWORKS", "webhooks may reach private addresses (default false)"),
        ("TOKENBROKER_WEBHOOK_RETRY_CAP_SECONDS", "longest wait between delivery attempts (default 600)"),
        ("TOKENBROKER_ISSUER", "the broker's issuer identifier (actor tokens, JWKS)"),
        ("TOKENBROKER_PROVIDER_CA_FILE", "CAs trusted for provider connections (default the system's)"),
        ("TOKENBROKER_PROVIDER_KEEPALIVE_SECONDS", "idle provider connections kept for (default 120)"),
        ("TOKENBROKER_PROVIDER_IDLE_CONNECTIONS_PER_HOST", "idle provider connections per host (default 8)"),
        ("TOKENBROKER_PROVIDER_IDLE_CONNECTIONS", "idle provider connections in all (default 2048)"),
        ("TOKENBROKER_PROXY_WORKERS", "proxied calls forwarded at once (default 64)"),
        ("TOKENBROKER_PROXY_QUEUE", "proxied calls waiting beyond those, else 503 (default 256)"),
        ("TOKENBROKER_PROXY_CONNECT_TIMEOUT_SECONDS", "connecting to an upstream (default 5)"),
        ("TOKENBROKER_PROXY_TIMEOUT_SECONDS", "a whole proxied exchange, body included (default 300)"),
        ("TOKENBROKER_PROXY_MAX_REQUEST_BYTES", "largest proxied request body (default 104857600)"),
        ("TOKENBROKER_PROXY_MAX_RESPONSE_BYTES", "largest upstream answer passed on (default 4294967296)"),
        ("TOKENBROKER_PROXY_REPLAY_BYTES", "request bodies up to this are held to be resent (default 65536)"),
        ("TOKENBROKER_ACCESS_LOG", "log every request (default false)"),
        ("TOKENBROKER_LOG_LEVEL", "debug, info, warn or error (default info)"),
        ("TOKENBROKER_SQL_DIR", "the migrations folder"),
        ("TOKENBROKER_CATALOGUE_DIR", "the shipped provider catalogue folder"),
        ("TOKENBROKER_PROVIDERS_DIR", "the operator's own provider descriptors"),
    ]

    /// The lines `serve --help` adds to its usage.
    static var help: String {
        let width = all.map(\.name.count).max() ?? 0
        return "configuration (environment variables, or NAME=value lines in --config FILE; an error names the variable and exits 2;\n"
            + "docs/reference/configuration.md explains each):\n"
            + all.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.summary }.joined(separator: "\n")
    }
}
