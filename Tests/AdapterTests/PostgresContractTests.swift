import BrokerCore
import BrokerCrypto
@testable import BrokerPostgres
import BrokerTesting
import Foundation
import Testing

/// Every store port's contract against PostgreSQL, two fresh tenants each (the same contracts
/// the in-memory fakes honour).
@Suite("Every store port's contract: PostgreSQL")
struct PostgresContractTests {
    @Test("registry", arguments: RegistryStoreContract.allCases)
    func registry(_ c: RegistryStoreContract) throws {
        try c.run(PostgresRegistryStore(pool: try TestDatabase.migrated(), sealer: TestDatabase.sealer))
    }

    @Test("pending logins", arguments: LoginStoreContract.allCases)
    func logins(_ c: LoginStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresLoginStore(pool: pool, sealer: TestDatabase.sealer), tenants: try TestDatabase.tenants(pool))
    }

    @Test("revocation and its outbox", arguments: RevocationStoreContract.allCases)
    func revocation(_ c: RevocationStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer), tenants: try TestDatabase.tenants(pool))
    }

    @Test("app tokens", arguments: AppTokenStoreContract.allCases)
    func appTokens(_ c: AppTokenStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresAppTokenStore(pool: pool, sealer: TestDatabase.sealer), tenants: try TestDatabase.tenants(pool))
    }

    @Test("DPoP nonces", arguments: DPoPNonceStoreContract.allCases)
    func dpopNonces(_ c: DPoPNonceStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresDPoPNonceStore(pool: pool), tenants: try TestDatabase.tenants(pool))
    }

    @Test("sign-out jobs", arguments: SignoutStoreContract.allCases)
    func signouts(_ c: SignoutStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresSignoutStore(pool: pool), sessions: PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer),
                  tenants: try TestDatabase.tenants(pool))
    }

    @Test("change feed: two replicas, two tenants")
    func changeFeed() throws {
        let pool = try TestDatabase.migrated(), url = try TestDatabase.url()
        let a = PostgresChangeFeed(pool: pool, listenURL: url), b = PostgresChangeFeed(pool: PGPool(url: url, size: 1), listenURL: url)
        defer { a.stop(); b.stop() }
        try ChangeFeedContract.run(a, replica: b, tenants: try TestDatabase.tenants(pool))
    }

    @Test("session listing")
    func catalog() throws {
        let pool = try TestDatabase.migrated()
        let sessions = PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer)
        try SessionCatalogContract.run(sessions, sessions: sessions, tenants: try TestDatabase.tenants(pool))
    }

    @Test("audit trail")
    func audit() throws {
        let pool = try TestDatabase.migrated()
        let sink = PostgresAuditSink(pool: pool)
        try AuditLogContract.run(sink, log: sink, tenants: try TestDatabase.tenants(pool))
    }

    @Test("retention: exactly the tenant's rows past their age, a batch at a time")
    func retention() throws {
        let pool = try TestDatabase.migrated()
        try RetentionStoreContract.run(PostgresRetentionStore(pool: pool), fixture: Self.retentionFixture(pool), tenants: try TestDatabase.tenants(pool))
    }

    @Test("sealed values: counted by key, re-sealed under the current key, the old key then unneeded")
    func sealedValues() throws {
        let pool = try TestDatabase.migrated()
        let suffix = UUID().uuidString.prefix(6).lowercased()
        let ids = (old: "old-\(suffix)", new: "new-\(suffix)", stranger: "str-\(suffix)")
        func key(_ id: String) throws -> String { try "\(id):" + SealingKeys.generate(id: "x").dropFirst(2) }
        let oldKey = try key(ids.old), newKey = try key(ids.new)
        func replica(_ ring: String) throws -> SealedValueStoreContract.Replica {
            let sealer = AESGCMSealer(keys: try SealingKeys.parse(ring))
            return SealedValueStoreContract.Replica(sealed: PostgresSealedValues(pool: pool, sealer: sealer),
                                                    sessions: PostgresSessionStore(pool: pool, sealer: sealer),
                                                    registry: PostgresRegistryStore(pool: pool, sealer: sealer))
        }
        try SealedValueStoreContract.run(old: try replica(oldKey), rotated: try replica(newKey + "," + oldKey), newOnly: try replica(newKey),
                                         stranger: try replica(key(ids.stranger)), ids: ids, tenants: try TestDatabase.tenants(pool))
    }

    @Test("sealed values: a replica that finds another counting takes the kept count, without waiting")
    func sealedCountShared() throws {
        let pool = try TestDatabase.migrated()
        let store = PostgresSealedValues(pool: pool, sealer: TestDatabase.sealer)
        let t = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let kept = try store.recount(now: t)
        try pool.withConnection { c in
            c.begin()
            defer { c.rollback() }
            try c.execute("SELECT 1 FROM sealed_value_counts FOR UPDATE")   // another replica counting
            let started = Date()
            let asked = try store.sharedCount(maxAge: 60, now: t.addingTimeInterval(3600))
            #expect(asked == kept, "the stale count was counted again while another held it")
            #expect(Date().timeIntervalSince(started) < 1, "the ask waited for the holder")
        }
        #expect(try store.sharedCount(maxAge: 60, now: t.addingTimeInterval(3600)).countedAt == t.addingTimeInterval(3600),
                "once free, the stale count is counted again")
    }

    /// Writes the contract's rows with SQL, at the instants it asks for.
    static func retentionFixture(_ pool: PGPool) -> RetentionStoreContract.Fixture {
        RetentionStoreContract.Fixture(seed: { kind, tenant, row, cut in
            let id = "ret-" + UUID().uuidString.prefix(12).lowercased()
            let ended = cut.addingTimeInterval(row == .recent ? 60 : -60), began = cut.addingTimeInterval(-86_400)
            try pool.withConnection { c in
                switch kind {
                case .auditEvents:
                    let last = row == .stillOpen ? cut.addingTimeInterval(60) : ended
                    try c.execute("""
                        INSERT INTO audit_events (at, last_at, actor, action, tenant_id, session_id, outcome)
                        VALUES (\(row == .stillOpen ? began : ended), \(last), 'contract', 'token.issue', \(tenant), \(id), 'ok')
                        """)
                case .endedSessions:
                    let state = row == .stillOpen ? "active" : "revoked"
                    try c.execute("""
                        INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, state, version, granted_at, created_at,
                                              revoked_at, ended_at)
                        VALUES (\(tenant), \(id), 'app', 'sub', 'https://idp.example', '{openid}', \(state), 1, \(began), \(began),
                                \(row == .stillOpen ? nil : ended), \(row == .stillOpen ? nil : ended))
                        """)
                    if row == .revocationPending {
                        try c.execute("""
                            INSERT INTO revocation_outbox (id, tenant_id, session_id, client_id, token, hint, next_attempt_at, created_at)
                            VALUES (\(id), \(tenant), \(id), 'app', '\\x00', 'refresh_token', \(ended), \(ended))
                            """)
                    }
                case .finishedSignouts:
                    let done = row != .stillOpen
                    try c.execute("""
                        INSERT INTO signout_jobs (id, tenant_id, filter, dry_run, state, total, created_by, created_at, updated_at, finished_at)
                        VALUES (\(id), \(tenant), '{}', false, \(done ? "done" : "running"), 1, 'contract', \(began), \(began),
                                \(done ? ended : nil))
                        """)
                    try c.execute("""
                        INSERT INTO signout_items (job_id, tenant_id, session_id, client_id, state)
                        VALUES (\(id), \(tenant), \(id), 'app', \(done ? "revoked" : "pending"))
                        """)
                case .webhookEvents:
                    let at = row == .stillOpen ? began : ended
                    try c.execute("""
                        INSERT INTO webhook_events (tenant_id, id, type, ordering_key, payload, created_at)
                        VALUES (\(tenant), \(id), 'session.revoked', \(id), '{}', \(at))
                        """)
                    try c.execute("""
                        INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, seq, ordering_key, state, next_attempt_at, created_at)
                        VALUES (\(tenant), 'whk_contract', \(id), 1, \(id), \(row == .stillOpen ? "pending" : "delivered"), \(at), \(at))
                        """)
                case .expiredAppTokens:
                    // Still open: its token expired a day before the cut, and it was handed out since.
                    let expires = row == .stillOpen ? began : ended, used = row == .stillOpen ? cut.addingTimeInterval(60) : began
                    try c.execute("""
                        INSERT INTO app_tokens (tenant_id, id, client_id, access_token, expires_at, version, granted_at, last_used_at, created_at)
                        VALUES (\(tenant), \(id), 'app', '\\x00', \(expires), 1, \(began), \(used), \(began))
                        """)
                }
            }
            return id   // audit rows are found by their session column
        }, exists: { kind, tenant, id in
            try pool.withConnection { c in
                switch kind {
                case .auditEvents: try c.execute("SELECT 1 FROM audit_events WHERE session_id = \(id)").count == 1
                case .endedSessions: try c.execute("SELECT 1 FROM sessions WHERE tenant_id = \(tenant) AND id = \(id)").count == 1
                case .finishedSignouts:
                    try c.execute("SELECT 1 FROM signout_jobs WHERE tenant_id = \(tenant) AND id = \(id)").count == 1
                        && c.execute("SELECT 1 FROM signout_items WHERE tenant_id = \(tenant) AND job_id = \(id)").count == 1
                case .webhookEvents:
                    try c.execute("SELECT 1 FROM webhook_events WHERE tenant_id = \(tenant) AND id = \(id)").count == 1
                        && c.execute("SELECT 1 FROM webhook_deliveries WHERE tenant_id = \(tenant) AND event_id = \(id)").count == 1
                case .expiredAppTokens: try c.execute("SELECT 1 FROM app_tokens WHERE tenant_id = \(tenant) AND id = \(id)").count == 1
                }
            }
        })
    }

    @Test("backlog: every tenant's unconfirmed revocations and running sign-outs, the oldest's age")
    func backlog() throws {
        let pool = try TestDatabase.migrated()
        let fixture = BacklogStoreContract.Fixture(revocation: { tenant, at in
            let id = "bkl-" + UUID().uuidString.prefix(12).lowercased()
            try pool.withConnection { c in
                try c.execute("""
                    INSERT INTO revocation_outbox (id, tenant_id, session_id, client_id, token, hint, next_attempt_at, created_at)
                    VALUES (\(id), \(tenant), \(id), 'app', '\\x00', 'refresh_token', \(at), \(at))
                    """)
            }
            return id
        }, signout: { tenant, items in
            let id = "bkl-" + UUID().uuidString.prefix(12).lowercased(), now = Date()
            try pool.withConnection { c in
                try c.execute("""
                    INSERT INTO signout_jobs (id, tenant_id, filter, dry_run, state, total, created_by, created_at, updated_at)
                    VALUES (\(id), \(tenant), '{}', false, 'running', \(items), 'contract', \(now), \(now))
                    """)
                for i in 0..<items {
                    try c.execute("INSERT INTO signout_items (job_id, tenant_id, session_id, client_id, state) VALUES (\(id), \(tenant), \("s\(i)"), 'app', 'pending')")
                }
            }
            return id
        }, settle: { revocations, jobs in
            try pool.withConnection { c in
                try c.execute("DELETE FROM revocation_outbox WHERE id = ANY(\(revocations))")
                try c.execute("UPDATE signout_items SET state = 'revoked' WHERE job_id = ANY(\(jobs))")
                try c.execute("UPDATE signout_jobs SET state = 'done', finished_at = now() WHERE id = ANY(\(jobs))")
            }
        })
        try BacklogStoreContract.run(PostgresBacklogStore(pool: pool), fixture: fixture, tenants: try TestDatabase.tenants(pool))
    }

    @Test("webhooks: endpoints per tenant, deliveries in order per session, leased, retried or given up, secrets rotated with an overlap")
    func webhooks() throws {
        let pool = try TestDatabase.migrated()
        let fixture = WebhookStoreContract.Fixture(enqueue: { tenant, events in
            guard let q = WebhookOutbox.enqueue(tenant: tenant, events, now: Date()) else { return }
            try pool.withConnection { try $0.execute(q) }
        }, session: { tenant, ends in
            let id = "whs-" + UUID().uuidString.prefix(12).lowercased(), began = Date().addingTimeInterval(-86_400)
            try pool.withConnection { c in
                try c.execute("""
                    INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, state, version, granted_at, created_at, grant_expires_at)
                    VALUES (\(tenant), \(id), 'app', 'sub', 'https://idp.example', '{openid}', 'active', 1, \(began), \(began), \(ends))
                    """)
            }
            return id
        })
        try WebhookStoreContract.run(PostgresWebhookStore(pool: pool, sealer: TestDatabase.sealer), fixture: fixture, tenants: try TestDatabase.tenants(pool))
    }

    @Test("broker keys: one current key, whichever replica makes it first")
    func brokerKeys() throws {
        let pool = try TestDatabase.migrated()
        // The contract's keys are not keys: they must not outlive it in a database brokers use.
        try pool.withConnection { try $0.execute("DELETE FROM broker_keys") }
        defer { _ = try? pool.withConnection { try $0.execute("DELETE FROM broker_keys") } }
        try BrokerKeyStoreContract.run(PostgresBrokerKeyStore(pool: pool, sealer: TestDatabase.sealer))
    }

    @Test("replay guard")
    func replays() throws { try ReplayGuardContract.run(PostgresReplayGuard(pool: try TestDatabase.migrated())) }
}
