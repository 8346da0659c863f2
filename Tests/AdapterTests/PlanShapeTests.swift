import BrokerCore
import BrokerPostgres
import Foundation
import Synchronization
import Testing

/// The hot statements' plans, as PostgreSQL really executes them: the stores run on a pool of
/// one connection on which auto_explain reports every plan back as a notice. Each statement must
/// reach `sessions` through its key (or the index meant for it) whatever the statistics say —
/// with none at all, with a tenant bulk-imported after the last ANALYZE (which looks empty to a
/// custom plan), and with fresh ones.
@Suite("Plan shapes of the hot statements", .serialized)
struct PlanShapeTests {
    /// One database of its own (autovacuum off for `sessions`, so the statistics are the ones
    /// each phase sets up), its stores on one explained connection.
    final class Lab: @unchecked Sendable {
        let admin: PGConnection
        let name: String
        let pool: PGPool
        let log = PlanLog()
        let sessions: PostgresSessionStore
        let registry: PostgresRegistryStore
        let signouts: PostgresSignoutStore

        init() throws {
            let url = try TestDatabase.url()
            admin = try PGConnection(url: url)
            name = "plans_" + UUID().uuidString.prefix(8).lowercased()
            try admin.execute("CREATE DATABASE \(raw: name)")
            let dbURL = PostgresStoreTests.replacingDatabase(url, with: name)
            _ = try Migrator(directory: TestDatabase.sqlDirectory).migrate(PGConnection(url: dbURL))
            pool = PGPool(url: dbURL, size: 1)
            try pool.withConnection { [log] c in
                c.noticeHandler = { text in log.notices.withLock { $0.append(text) } }
                try c.executeScript("""
                    LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_format = 'json';
                    SET auto_explain.log_level = 'notice'; SET client_min_messages = 'notice';
                    ALTER TABLE sessions SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)
                    """)
            }
            sessions = PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer)
            registry = PostgresRegistryStore(pool: pool, sealer: TestDatabase.sealer)
            signouts = PostgresSignoutStore(pool: pool)
        }

        func drop() { _ = try? admin.execute("DROP DATABASE \(raw: name) WITH (FORCE)") }

        /// `n` sessions of a new tenant, written in bulk as an import would.
        func importTenant(_ t: String, _ n: Int) throws {
            _ = try registry.putTenant(id: t, name: t, now: Date())
            _ = try registry.putClient(ClientRegistration(tenant: t, id: "app", issuer: "https://idp.example", clientID: "app",
                                                          authMethod: .none, redirectURI: "https://b/cb", scopes: ["openid"]),
                                       secret: nil, assertionKey: nil, now: Date())
            try pool.withConnection { c in
                try c.execute("""
                    INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, state, version, granted_at, created_at,
                        next_refresh_at, last_used_at)
                    SELECT \(t), 'ses_' || \(t) || '_' || g, 'app', 'user-' || (g % 500), 'https://idp.example', '{openid}',
                           CASE WHEN g % 10 = 0 THEN 'revoked' ELSE 'active' END, 1, now(), now() - g * interval '1 second',
                           now() + interval '1 hour' + g * interval '1 ms', now()
                    FROM generate_series(1, \(n)) g
                    """)
            }
        }

        func analyze() throws { try pool.withConnection { c in try c.execute("ANALYZE") } }

        /// The plans of what `body` runs: every scan of a relation (with its index) in each one.
        func explain(_ body: () throws -> Void) throws -> [(scans: [String], text: String)] {
            log.notices.withLock { $0.removeAll() }
            try body()
            return log.notices.withLock { $0 }.compactMap { notice in
                guard let brace = notice.firstIndex(of: "{"),
                      let json = try? JSONSerialization.jsonObject(with: Data(notice[brace...].utf8)) as? [String: Any] else { return nil }
                var scans: [String] = []
                func walk(_ node: [String: Any]) {
                    let type = node["Node Type"] as? String ?? "?"
                    if type.contains("Scan"), node["Relation Name"] != nil || node["Index Name"] != nil {
                        scans.append([type, node["Relation Name"] as? String, node["Index Name"] as? String].compactMap { $0 }.joined(separator: " ")
                                     + ((node["Index Cond"] as? String).map { " [" + $0 + "]" } ?? ""))
                    }
                    for child in node["Plans"] as? [[String: Any]] ?? [] { walk(child) }
                }
                walk(json["Plan"] as? [String: Any] ?? [:])
                return (scans, json["Query Text"] as? String ?? "")
            }
        }
    }

    /// The notices of the explained connection.
    final class PlanLog: Sendable {
        let notices = Mutex<[String]>([])
    }

    /// Runs every hot statement against `tenant` and checks how each reads `sessions`.
    func checkHotStatements(_ lab: Lab, tenant t: String, phase: String) throws {
        let id = "ses_\(t)_77", other = "ses_\(t)_78"
        let statements: [(String, () throws -> Void)] = [
            ("session read", { _ = try lab.sessions.session(tenant: t, id: id) }),
            ("batch read", { _ = try lab.sessions.sessions(tenant: t, ids: [id, other, "ses_unknown"]) }),
            ("locked re-read, write and notify", {
                try lab.sessions.withRefreshLock(tenant: t, id: id, timeout: 1) { s in
                    var next = s
                    next.version += 1
                    return (next, ())
                }
            }),
            ("hand-out marks", { try lab.sessions.touch([SessionUse(tenant: t, id: id, at: Date()), SessionUse(tenant: t, id: other, at: Date())]) }),
            ("revocation", { _ = try lab.sessions.revoke(tenant: t, id: other, timeout: 1, now: Date()) }),
        ]
        for (name, run) in statements {
            let plans = try lab.explain(run)
            let onSessions = plans.flatMap(\.scans).filter { $0.contains(" sessions") }
            #expect(!onSessions.isEmpty, "\(phase): \(name) was not explained")
            for scan in onSessions {
                #expect(scan.contains(" sessions sessions_pkey [") && scan.contains("id = "), "\(phase): \(name) reads sessions by \(scan)")
            }
        }
        // The due loader reads the partial index meant for it.
        let due = try lab.explain { _ = try lab.sessions.dueSessions(before: Date().addingTimeInterval(7200), limit: 500) }
        #expect(due.flatMap(\.scans).filter { $0.contains(" sessions") }.allSatisfy { $0.contains("sessions_due") }, "\(phase): due loader \(due.map(\.scans))")
        // The admin listing pages through an index in its order, never sorting the tenant.
        let listing = try lab.explain { _ = try lab.sessions.sessions(tenant: t, matching: SessionQuery(limit: 50)) }
        let listed = listing.flatMap(\.scans).filter { $0.contains(" sessions") }
        #expect(!listed.isEmpty && listed.allSatisfy { $0.contains("sessions_by_created") }, "\(phase): listing \(listed)")
    }

    @Test("key lookups use their key with no statistics, with a tenant imported after ANALYZE, and with fresh statistics")
    func hotStatementsUseTheirKeys() throws {
        let lab = try Lab()
        defer { lab.drop() }
        try lab.importTenant("early", 20_000)
        try checkHotStatements(lab, tenant: "early", phase: "no statistics")
        try lab.analyze()
        try lab.importTenant("late", 20_000)
        try checkHotStatements(lab, tenant: "late", phase: "imported after ANALYZE")
        try lab.analyze()
        try checkHotStatements(lab, tenant: "late", phase: "fresh statistics")
        try checkHotStatements(lab, tenant: "early", phase: "fresh statistics, older tenant")
    }

    @Test("sign-out claims and records, API keys and clients read their keys, whatever the statistics")
    func otherPortsUseTheirKeys() throws {
        let lab = try Lab()
        defer { lab.drop() }
        try lab.importTenant("early", 5_000)
        try lab.pool.withConnection { c in
            try c.execute("""
                INSERT INTO api_keys (id, name, roles, tenants, secret_hash, created_at)
                SELECT lpad(to_hex(g), 16, '0'), 'k' || g, '{worker}', '{early}', '\\x00', now() FROM generate_series(1, 5000) g
                """)
            try c.execute("""
                INSERT INTO signout_jobs (id, tenant_id, filter, dry_run, state, total, created_by, created_at, updated_at)
                SELECT 'so_' || g, 'early', '{}', true, 'done', 0, 'test', now(), now() FROM generate_series(1, 3000) g
                """)
            try c.execute("""
                INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, redirect_uri, scopes)
                SELECT 'early', 'app-' || g, 'https://idp.example', 'app', 'none', 'https://b/cb', '{openid}' FROM generate_series(1, 3000) g
                """)
        }
        try lab.analyze()
        try lab.importTenant("late", 20_000)
        let job = SignoutJob(id: "so_plan", tenant: "late", filter: .init(all: true), dryRun: false, state: .running, total: 0,
                             createdBy: "test", createdAt: Date())
        _ = try lab.signouts.createJob(job, idempotencyKey: nil)
        var claimed: [SignoutItem] = []
        let claims = try lab.explain { claimed = try lab.signouts.claimPendingItems(now: Date(), lease: 30, limit: 100) }
        #expect(claimed.count == 100)
        #expect(claims.flatMap(\.scans).filter { $0.contains("signout_items") }.allSatisfy { $0.contains("signout_items_pending") || $0.contains("signout_items_pkey") },
                "claim \(claims.map(\.scans))")
        let records = try lab.explain { try lab.signouts.record(claimed.map { SignoutItem.Result($0, .revoked) }, now: Date()) }
        // (signout_jobs has one row here: reading it whole is right.)
        for scan in records.flatMap(\.scans) where scan.contains("signout_items") {
            #expect(!scan.hasPrefix("Seq Scan"), "record: \(scan)")
        }
        // The outbox of a tenant with many entries, none known to the statistics.
        try lab.pool.withConnection { c in
            try c.execute("""
                INSERT INTO revocation_outbox (id, tenant_id, session_id, client_id, token, hint, next_attempt_at, created_at)
                SELECT 'rvk_' || g, 'late', 'ses_late_' || (g % 20000), 'app', '\\x00', 'refresh_token', now() + interval '1 day', now()
                FROM generate_series(1, 20000) g
                """)
        }
        let outbox = try lab.explain {
            try lab.sessions.revocationsDelivered(tenant: "late", ids: ["rvk_5", "rvk_6"])
            try lab.sessions.revocationFailed(tenant: "late", id: "rvk_7", next: Date(), reason: "x")
        }
        #expect(!outbox.isEmpty)
        for scan in outbox.flatMap(\.scans) {
            #expect(scan.contains("revocation_outbox_pkey [") && scan.contains("id = "), "outbox entry by its key: \(scan)")
        }
        let jobRead = try lab.explain { _ = try lab.signouts.job(tenant: "late", id: "so_plan") }
        for scan in jobRead.flatMap(\.scans) where scan.contains("signout_jobs") {
            #expect(scan.contains("signout_jobs_pkey"), "job by its key: \(scan)")
        }
        let keys = try lab.explain {
            _ = try lab.registry.apiKey(id: "00000000000004d2")
            _ = try lab.registry.client(tenant: "late", id: "app")
        }
        for scan in keys.flatMap(\.scans) { #expect(scan.contains("_pkey ["), "key or client lookup: \(scan)") }
    }
}
