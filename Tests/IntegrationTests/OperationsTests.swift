import Foundation
import Testing

@Suite("Operations: start-up, configuration, health, CLI (spec §4.4, §9)", .serialized)
struct OperationsTests {
    func env(_ extra: [String: String] = [:]) throws -> [String: String] {
        var e = ["DATABASE_URL": try TestEnv.databaseURL(),
                 "TOKENBROKER_SEALING_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString()]
        for (k, v) in extra { e[k] = v }
        return e
    }

    @Test("serve refuses an unmigrated database with a clear message, then migrate makes it ready")
    func refusesUnmigrated() async throws {
        let db = "fresh_" + UUID().uuidString.prefix(8).lowercased()
        _ = try runPSQL("CREATE DATABASE \(db)")
        defer { _ = try? runPSQL("DROP DATABASE \(db) WITH (FORCE)") }
        let url = try TestEnv.databaseURL(named: db)
        #expect(url.contains(db))
        let refused = try runCommand("tokenbroker", ["serve"], env: try env(["DATABASE_URL": url, "TOKENBROKER_LISTEN": "127.0.0.1:\(TestEnv.freePort())"]))
        #expect(refused.status == 2)
        #expect(refused.err.contains("not migrated") && refused.err.contains("tokenbroker migrate"))
        let migrated = try runCommand("tokenbroker", ["migrate"], env: try env(["DATABASE_URL": url]))
        #expect(migrated.status == 0)
        let b = try await BrokerServer(env: try env(["DATABASE_URL": url]))
        defer { b.stop() }
        try expectStatus(try await HTTP.get(b.url + "/readyz"), 200)
    }

    @Test("configuration errors name the variable and exit 2")
    func configurationErrors() throws {
        let noKey = try runCommand("tokenbroker", ["serve"], env: ["DATABASE_URL": try TestEnv.databaseURL(), "TOKENBROKER_SEALING_KEYS": ""])
        #expect(noKey.status == 2 && noKey.err.contains("TOKENBROKER_SEALING_KEYS"))
        let badKey = try runCommand("tokenbroker", ["serve"], env: try env(["TOKENBROKER_SEALING_KEYS": "k1:c2hvcnQ="]))
        #expect(badKey.status == 2 && badKey.err.contains("not 32 bytes") && !badKey.err.contains("c2hvcnQ="))
        let badListen = try runCommand("tokenbroker", ["serve"], env: try env(["TOKENBROKER_LISTEN": "nowhere"]))
        #expect(badListen.status == 2 && badListen.err.contains("TOKENBROKER_LISTEN"))
        let badDB = try runCommand("tokenbroker", ["serve"], env: try env(["DATABASE_URL": "postgresql://nobody:hunter2@/nodb?host=/nonexistent"]))
        #expect(badDB.status == 1 && badDB.err.contains("cannot connect") && !badDB.err.contains("hunter2"))
    }

    @Test("apikey create prints only the key; health, readiness and metrics answer")
    func cliAndHealth() async throws {
        let created = try runCommand("tokenbroker", ["apikey", "create", "--role", "operator", "--name", "ops"], env: try env())
        #expect(created.status == 0)
        let lines = created.out.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("tbk_") && lines[0].count == 64)
        TestEnv.secret(String(lines[0]))
        let b = try await BrokerServer(env: try env())
        defer { b.stop() }
        try expectStatus(try await HTTP.get(b.url + "/healthz"), 200)
        try expectStatus(try await HTTP.get(b.url + "/readyz"), 200)
        let metrics = try await HTTP.get(b.url + "/metrics")
        #expect(metrics.text.contains("# TYPE tokenbroker_token_requests_total counter"))
        let unknown = try runCommand("tokenbroker", ["frobnicate"], env: try env())
        #expect(unknown.status == 2)
    }

    @Test("SIGTERM stops the broker cleanly and flushes its audit trail")
    func gracefulShutdown() async throws {
        let w = try await World()
        let session = try await w.importSession(subject: "zoe")
        try expectStatus(try await w.token(session), 200)
        w.brokers[0].process.stop(signal: SIGTERM)
        #expect(w.brokers[0].process.process.terminationStatus == 0)
        let audited = try runPSQL("SELECT coalesce(sum(count), 0) FROM audit_events WHERE tenant_id = '\(w.tenant)' AND action = 'token.issue' AND session_id = '\(session)'")
        #expect(Int(audited.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 >= 1)
        w.stop()
    }
}
