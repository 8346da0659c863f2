/// CommandSpec is what one `tokenbroker` command accepts: its usage text, the options that take
/// a value, the flags, and how many positionals. Arguments refuses anything else, so a typo in
/// an option (`--idle-sinse`) is exit 2 with the usage instead of a filter silently dropped.
struct CommandSpec {
    let name: String
    let usage: String
    var options: Set<String> = []
    var flags: Set<String> = []
    var positionals: ClosedRange<Int> = 0...0
    /// Reads DATABASE_URL and the rest of the configuration (with `--config FILE`).
    var configured = true
    /// Shown by the command's own `--help` only, after the usage.
    var details = ""

    /// Every command, by name.
    static let all: [String: CommandSpec] = Dictionary(uniqueKeysWithValues: [
        CommandSpec(name: "serve", usage: "tokenbroker serve [--config FILE]\n  run the HTTP API (refuses an unmigrated database)", details: ConfigVariables.help),
        CommandSpec(name: "migrate", usage: """
            tokenbroker migrate [--config FILE]
              apply the SQL migrations in sql/ (safe to run from several replicas)
            tokenbroker migrate status [--config FILE]
              {"current", "applied", "pending"} as JSON; exit 0 when the schema is current, 3 when migrations are pending
            """, positionals: 0...1),
        CommandSpec(name: "health", usage: """
            tokenbroker health [--url URL] [--ready]
              ask this replica's ops listener (TOKENBROKER_OPS_LISTEN, else TOKENBROKER_LISTEN; plain HTTP) for /healthz,
              or /readyz with --ready: exit 0 when it answers 200, 1 otherwise — a container HEALTHCHECK with no curl
            """, options: ["url"], flags: ["ready"], configured: false),
        CommandSpec(name: "tenant", usage: """
            tokenbroker tenant put ID --name NAME [--config FILE]   create or rename a tenant
            tokenbroker tenant list [--config FILE]                 list tenants
            """, options: ["name"], positionals: 1...2),
        CommandSpec(name: "client", usage: """
            tokenbroker client put --tenant T --id C [--issuer URL] --client-id ID --auth-method M --redirect-uri URL
                                   --scopes "openid offline_access" [--client-secret-file F] [--redirect-after-allowed URL]...
                                   [--min-ttl S] [--lead-seconds S] [--jitter-seconds S] [--assertion-alg ALG] [--trust-anchors-file F]
                                   [--provider NAME] [--protocol oidc|oauth2] [--descriptor-file F] [--no-verify] [--config FILE]
                                   [--tls-client-certificate-file F --tls-client-key-file F] [--hand-out-certificate-bound]
              create or replace a client registration (the secret is read from the file, or from TOKENBROKER_CLIENT_SECRET);
              the issuer's metadata must name exactly --issuer, unless --no-verify; --trust-anchors-file: PEM CA
              certificates this client's provider connections trust instead of the deployment's; --provider: a catalogue
              entry (docs/providers.md), with --descriptor-file's JSON object merged over it (docs/provider-descriptors.md);
              --tls-client-certificate-file, --tls-client-key-file: the PEM chain and key of a tls_client_auth or
              self_signed_tls_client_auth client (mutual TLS, RFC 8705), checked and sealed; --hand-out-certificate-bound:
              workers (holding the same certificate) may have tokens bound to it, else only the outbound proxy uses them
            tokenbroker client token --tenant T --client C [--scope S] [--audience A] [--resource R] [--min-ttl N] [--config FILE]
              the client's own app token (client credentials, docs/app-tokens.md), as the worker route answers it: the
              stored one when it lives --min-ttl seconds, else one new grant shared with every replica; audited as `cli`
            """, options: ["tenant", "id", "issuer", "client-id", "auth-method", "redirect-uri", "scopes", "client-secret-file",
                           "redirect-after-allowed", "min-ttl", "lead-seconds", "jitter-seconds", "assertion-alg", "trust-anchors-file",
                           "provider", "protocol", "descriptor-file", "client", "scope", "audience", "resource",
                           "tls-client-certificate-file", "tls-client-key-file"],
            flags: ["no-verify", "hand-out-certificate-bound"], positionals: 1...1),
        CommandSpec(name: "apikey", usage: """
            tokenbroker apikey create --name N --role R [--role R]... (--tenant T [--tenant T]... | --all-tenants)
                                      [--expires-in SECONDS] [--certificate-sha256 HEX] [--config FILE]
              create an API key; prints only the key (with --certificate-sha256: the principal of that client
              certificate on an mTLS listener, no bearer key; prints its id)
            tokenbroker apikey list [--config FILE]
              every key, a JSON line each: id, name, roles, tenants, created, last used, expires, revoked
            tokenbroker apikey rotate ID [--overlap SECONDS] [--config FILE]
              a new secret for the key (printed alone); the old one keeps working for the overlap (default a day)
            tokenbroker apikey revoke ID [--config FILE]
              revoke an API key
            """, options: ["name", "role", "tenant", "expires-in", "certificate-sha256", "overlap"], flags: ["all-tenants"], positionals: 1...2),
        CommandSpec(name: "sealing-key", usage: SealingKeyCommand.usage, options: ["id", "batch"], positionals: 1...1),
        CommandSpec(name: "signout", usage: SignoutCommand.usage,
                    options: ["tenant", "subject", "end-user", "client", "created-before", "idle-since", "timeout", "idp-wait", "idempotency-key", "url", "key-file"],
                    flags: ["all", "dry-run", "wait"], configured: false),
        CommandSpec(name: "purge", usage: """
            tokenbroker purge [--config FILE]
              one retention pass now (serve runs one a minute): deletes audit rows, ended sessions, finished sign-out
              jobs, webhook events and unused expired app tokens older than the TOKENBROKER_RETENTION_* ages; prints
              what it deleted, as JSON
            """),
        CommandSpec(name: "routes", usage: "tokenbroker routes [--config FILE]\n  print the HTTP route table (METHOD PATTERN), as docs/openapi.yaml lists it"),
    ].map { ($0.name, $0) })
}
