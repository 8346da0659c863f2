import Foundation
import Testing

/// Replicas behind PgBouncer in transaction pooling mode (deploy/REPLICAS.md), the pooler that
/// `make test` starts (scripts/pgbouncer.sh): the pool goes through it, LISTEN goes straight to
/// PostgreSQL (TOKENBROKER_LISTEN_DATABASE_URL), and nothing else needs session state.
@Suite("PgBouncer in transaction pooling mode", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["TOKENBROKER_TEST_PGBOUNCER_URL"] != nil, "make test starts PgBouncer"))
struct PoolerTests {
    static var poolerURL: String { ProcessInfo.processInfo.environment["TOKENBROKER_TEST_PGBOUNCER_URL"] ?? "" }

    /// The pooler's URL for database `db`.
    static func poolerURL(named db: String) -> String {
        let u = poolerURL
        guard let at = u.range(of: "@/"), let q = u.range(of: "?", range: at.upperBound..<u.endIndex) else { return u }
        return u.replacingCharacters(in: at.upperBound..<q.lowerBound, with: db)
    }

    func world(replicas: Int) async throws -> World {
        // PgBouncer 1.18 (Debian's) does not carry prepared statements between server connections.
        try await World(replicas: replicas, extraEnv: ["DATABASE_URL": Self.poolerURL, "TOKENBROKER_LISTEN_DATABASE_URL": try TestEnv.databaseURL(),
                                                       "TOKENBROKER_DB_PREPARED_STATEMENTS": "false"])
    }

    @Test("three replicas through the pooler, 90 concurrent requests for one expiring session: one refresh at the IdP")
    func singleFlight() async throws {
        let w = try await world(replicas: 3)
        defer { w.stop() }
        let session = try await w.importSession(subject: "pooled", expiresIn: 5)
        let before = try await w.idp.stats(client: w.idpClientID)
        let replies = try await withThrowingTaskGroup(of: HTTP.Reply.self) { g in
            for i in 0..<90 { g.addTask { try await w.token(session, replica: i % 3) } }
            return try await g.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.filter { $0.status != 200 }.map(\.text).prefix(3))")
        #expect(Set(replies.compactMap { $0["access_token"] as? String }).count == 1)
        let after = try await w.idp.stats(client: w.idpClientID)
        #expect(after.refreshCalls - before.refreshCalls == 1)
        #expect(after.reuseDetected == 0)
    }

    @Test("a revocation on one replica stops the others handing out the token within 1 s")
    func revocationReach() async throws {
        let w = try await world(replicas: 3)
        defer { w.stop() }
        let session = try await w.importSession(subject: "revoked-pooled")
        for replica in 0..<3 { try expectStatus(try await w.token(session, replica: replica), 200) }   // cached everywhere
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey), 200)
        let revokedAt = Date()
        for replica in 1..<3 {
            while try await w.token(session, replica: replica).status == 200 {
                #expect(Date().timeIntervalSince(revokedAt) <= 1, "replica \(replica) still hands out the revoked session's token")
                if Date().timeIntervalSince(revokedAt) > 1 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        for replica in 0..<3 { try expectStatus(try await w.token(session, replica: replica), 409) }
    }

    @Test("prepared statements left on behind the pooler: the first lost statement turns them off, logged once; 200 token requests all answered, a revocation reaches the others")
    func preparedStatementsTurnedOff() async throws {
        // Every token request reads its session (cache max age 0): key lookups on every pool connection.
        let w = try await World(replicas: 2, extraEnv: ["DATABASE_URL": Self.poolerURL, "TOKENBROKER_LISTEN_DATABASE_URL": try TestEnv.databaseURL(),
                                                        "TOKENBROKER_CACHE_MAX_AGE_SECONDS": "0"])
        defer { w.stop() }
        var sessions: [String] = []
        for i in 0..<10 { sessions.append(try await w.importSession(subject: "prepared-\(i)")) }
        let all = sessions
        let replies = try await withThrowingTaskGroup(of: HTTP.Reply.self) { g in
            for i in 0..<200 { g.addTask { try await w.token(all[i % all.count], replica: i % 2) } }
            return try await g.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.filter { $0.status != 200 }.map(\.text).prefix(3))")
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(all[0])", key: w.workerKey), 200)
        try expectStatus(try await w.token(all[0], replica: 1), 409)
        for b in w.brokers {
            let off = b.process.output.split(separator: "\n").filter { $0.contains("\"code\":\"prepared_statements_off\"") }
            #expect(off.count == 1, "\(off)")
            #expect(off.allSatisfy { $0.contains("\"severity_text\":\"WARN\"") && $0.contains("TOKENBROKER_DB_PREPARED_STATEMENTS=false") })
            let metrics = try await HTTP.get(b.url + "/metrics").text
            #expect(metrics.contains("\ntokenbroker_db_prepared_statements 0\n") && metrics.contains("\ntokenbroker_db_prepared_statements_turned_off 1\n"))
        }
    }

    @Test("a replica whose LISTEN goes through the pooler is found deaf within 15 s: ERROR line, metric 0, unready, and it serves nothing cached")
    func deafReplicaFound() async throws {
        let w = try await world(replicas: 1)
        defer { w.stop() }
        let deaf = try await BrokerServer(env: w.env.merging(["TOKENBROKER_LISTEN_DATABASE_URL": Self.poolerURL]) { $1 }, name: "deaf")
        defer { deaf.stop() }
        let started = Date()
        let session = try await w.importSession(subject: "deaf")
        var found = false
        while !found, Date().timeIntervalSince(started) < 15 {
            found = deaf.process.output.contains("\"code\":\"change_feed_dead\"")
            if !found { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(found, "no change_feed_dead line within 15 s")
        let line = deaf.process.output.split(separator: "\n").first { $0.contains("\"code\":\"change_feed_dead\"") } ?? ""
        #expect(line.contains("\"severity_text\":\"ERROR\""))
        #expect(try await HTTP.get(deaf.url + "/metrics").text.contains("\ntokenbroker_change_feed_alive 0\n"))
        let ready = try await HTTP.get(deaf.url + "/readyz")
        #expect(ready.status == 503 && ready.text.contains("change feed not delivering"))
        // The healthy replica's revocation reaches the deaf one at once: it re-reads what it serves.
        let deafToken = { try await HTTP.post(deaf.url + "/v1/tenants/\(w.tenant)/sessions/\(session)/token", key: w.workerKey, json: ["min_ttl": 60]) }
        try expectStatus(try await deafToken(), 200)
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey), 200)
        try expectStatus(try await deafToken(), 409)
        // The healthy replica's own feed is alive.
        #expect(try await HTTP.get(w.brokers[0].url + "/readyz").status == 200)
        #expect(try await HTTP.get(w.brokers[0].url + "/metrics").text.contains("\ntokenbroker_change_feed_alive 1\n"))
    }

    @Test("a replica on its defaults behind the pooler, prepared statements on and no LISTEN URL of its own, answers every request after its first seconds, refuses a revocation made elsewhere within 2 s, and names both faults once")
    func defaultsBehindThePooler() async throws {
        let w = try await world(replicas: 1)
        defer { w.stop() }
        var env = w.env
        env["DATABASE_URL"] = Self.poolerURL
        env["TOKENBROKER_LISTEN_DATABASE_URL"] = nil
        env["TOKENBROKER_DB_PREPARED_STATEMENTS"] = nil
        let plain = try await BrokerServer(env: env, name: "defaults")
        defer { plain.stop() }
        var sessions: [String] = []
        for i in 0..<10 { sessions.append(try await w.importSession(subject: "defaults-\(i)")) }
        let all = sessions
        let base = plain.url + "/v1/tenants/\(w.tenant)/sessions/", key = w.workerKey
        @Sendable func token(_ session: String) async throws -> HTTP.Reply {
            try await HTTP.post(base + session + "/token", key: key, json: ["min_ttl": 60])
        }
        // Its first seconds: traffic, until its canary has been found missing.
        let started = Date()
        while !plain.process.output.contains("\"code\":\"change_feed_dead\""), Date().timeIntervalSince(started) < 15 {
            _ = try await token(all[Int.random(in: 0..<all.count)])
            try await Task.sleep(for: .milliseconds(200))
        }
        // From then on, everything it is asked succeeds.
        let replies = try await withThrowingTaskGroup(of: HTTP.Reply.self) { g in
            for i in 0..<100 { g.addTask { try await token(all[i % all.count]) } }
            return try await g.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.filter { $0.status != 200 }.map(\.text).prefix(3))")
        try expectStatus(try await HTTP.request("DELETE", plain.url + "/v1/tenants/\(w.tenant)/sessions/\(all[1])", key: w.workerKey), 200)
        try expectStatus(try await w.token(all[1]), 409)
        // A revocation made on the other replica is refused here within 2 s, with no notice heard.
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(all[0])", key: w.workerKey), 200)
        let revoked = Date()
        var status = 200
        while status == 200, Date().timeIntervalSince(revoked) < 2 {
            status = try await token(all[0]).status
            if status == 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status == 409, "still handed out 2 s after the revocation")
        // Both misconfigurations named, once each.
        let lines = plain.process.output.split(separator: "\n")
        #expect(lines.filter { $0.contains("\"code\":\"prepared_statements_off\"") }.count == 1)
        #expect(lines.filter { $0.contains("\"code\":\"change_feed_dead\"") }.count == 1)
    }

    @Test("two migrations at once through the pooler apply each file once and leave no lock behind")
    func migrationsTwiceAtOnce() async throws {
        let db = "pooled_" + UUID().uuidString.prefix(8).lowercased()
        _ = try runPSQL("CREATE DATABASE \(db)")
        defer { _ = try? runPSQL("DROP DATABASE \(db) WITH (FORCE)") }
        let env = ["DATABASE_URL": Self.poolerURL(named: db)]
        let runs = try await withThrowingTaskGroup(of: (status: Int32, out: String, err: String).self) { g in
            for _ in 0..<2 { g.addTask { try runCommand("tokenbroker", ["migrate"], env: env) } }
            return try await g.reduce(into: []) { $0.append($1) }
        }
        #expect(runs.allSatisfy { $0.status == 0 }, "\(runs.map(\.err))")
        let files = try FileManager.default.contentsOfDirectory(atPath: TestEnv.root.appendingPathComponent("sql").path).filter { $0.hasSuffix(".sql") }.count
        let direct = try TestEnv.databaseURL(named: db)
        #expect(try runPSQL("SELECT count(*) FROM schema_migrations", url: direct).trimmingCharacters(in: .whitespacesAndNewlines) == "\(files)")
        #expect(try runPSQL("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'", url: direct)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "0", "an advisory lock outlived its migration")
        // The migrations run outside a transaction took turns through the lease row, given back.
        #expect(try runPSQL("SELECT count(*) FROM schema_migration_lease", url: direct).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // A direct migration afterwards does not wait for anything.
        let started = Date()
        let again = try runCommand("tokenbroker", ["migrate"], env: ["DATABASE_URL": direct])
        #expect(again.status == 0 && Date().timeIntervalSince(started) < 5, "\(again.err)")
    }
}
