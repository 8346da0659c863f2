import Foundation
import Testing

@Suite("Bad input: precise status, nothing changed", .serialized)
struct BadInputTests {
    func sessionCount(_ w: World) async throws -> Int {
        // Through the database: the broker has no list route yet.
        let out = try runPSQL("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)'")
        return Int(out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test("no key, an unknown key and a revoked key are 401")
    func unauthenticated() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "alice")
        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)/token"
        try expectStatus(try await HTTP.post(url, json: ["min_ttl": 60]), 401)
        try expectStatus(try await HTTP.post(url, key: "tbk_0123456789abcdef_" + String(repeating: "A", count: 43), json: [:]), 401)
        let r = try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey, json: ["name": "tmp", "roles": ["worker"], "tenants": [w.tenant]])
        let key = r["key"] as! String, id = r["id"] as! String
        TestEnv.secret(key)
        try expectStatus(try await HTTP.post(url, key: key, json: [:]), 200)
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/apikeys/\(id)", key: w.operatorKey), 204)
        let refused = try await HTTP.post(url, key: key, json: [:])
        try expectStatus(refused, 401)
        #expect(refused["error"] as? String == "unauthorized" && refused["request_id"] is String)
        #expect(refused.headers["www-authenticate"] == "Bearer")
    }

    @Test("a key of tenant A never reaches tenant B")
    func crossTenant() async throws {
        let w = try await World()
        defer { w.stop() }
        let sessionA = try await w.importSession(subject: "alice")
        let other = TestEnv.uniqueName("t")
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(other)", key: w.operatorKey, json: ["name": "B"]), 201)
        let keyB = try await w.newKey(roles: ["worker", "admin"], tenants: [other])
        let viaB = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(sessionA)/token", key: keyB, json: [:])
        try expectStatus(viaB, 404)
        #expect(viaB["access_token"] == nil)
        // The session id under B's own tenant does not exist either.
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(other)/sessions/\(sessionA)/token", key: keyB, json: [:]), 404)
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(sessionA)", key: keyB), 404)
        // A worker key cannot administer; a tenant key cannot create keys.
        let workerOnly = try await w.newKey(roles: ["worker"], tenants: [w.tenant])
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(sessionA)", key: workerOnly), 403)
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.workerKey, json: ["name": "x", "roles": ["admin"], "tenants": ["*"]]), 403)
    }

    @Test("malformed JSON 400, wrong types 400, oversize 413, unknown session 404, bad import stores nothing")
    func malformed() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "alice")
        let base = w.brokers[0].url + "/v1/tenants/\(w.tenant)"
        let before = try await sessionCount(w)

        let garbage = try await HTTP.request("POST", base + "/sessions/\(session)/token", key: w.workerKey, body: Data("{\"min_ttl\": 6".utf8))
        try expectStatus(garbage, 400)
        #expect(garbage["error"] as? String == "invalid_json")
        let wrongType = try await w.token(session, body: ["min_ttl": "sixty"])
        try expectStatus(wrongType, 400)
        #expect(wrongType["error"] as? String == "invalid_request")
        try expectStatus(try await w.token(session, body: ["min_ttl": -1]), 400)
        let huge = try await HTTP.request("POST", base + "/sessions:import", key: w.workerKey, body: Data(repeating: 0x20, count: 300_000))
        try expectStatus(huge, 413)
        #expect(huge["error"] as? String == "payload_too_large")
        try expectStatus(try await w.token("ses_doesnotexist"), 404)
        try expectStatus(try await HTTP.post(base + "/sessions:import", key: w.workerKey,
                                             json: ["client": w.client, "subject": "x", "refresh_token": 42]), 400)
        try expectStatus(try await HTTP.post(base + "/sessions:import", key: w.workerKey,
                                             json: ["client": "nope", "subject": "x", "refresh_token": "secret-refresh-token-value"]), 404)
        try expectStatus(try await HTTP.post(base + "/sessions:import", key: w.workerKey,
                                             json: ["client": w.client, "subject": "x", "refresh_token": "r", "access_token": "a"]), 400)
        #expect(try await sessionCount(w) == before)
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/nope"), 404)
        try expectStatus(try await HTTP.request("DELETE", base + "/sessions/\(session)/token", key: w.workerKey), 405)
    }

    @Test("scope not granted 403, impossible min_ttl 422 with the maximum")
    func scopeAndTTL() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "alice")
        let scope = try await w.token(session, body: ["scope": "openid admin:all"])
        try expectStatus(scope, 403)
        #expect(scope["error"] as? String == "insufficient_scope")
        _ = try await w.token(session, body: ["force_refresh": true])   // learn the IdP's lifetime
        let ttl = try await w.token(session, body: ["min_ttl": 7200])
        try expectStatus(ttl, 422)
        #expect(ttl["max_ttl"] as? Int == 3599)   // below the lifetime: a token never lives longer than issued
    }

    @Test("a session the IdP refused is needs_reauth: 409 on every request, on every replica, no more IdP calls")
    func needsReauth() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let session = try await w.importSession(subject: "mallory")
        try await w.idp.revokeSubject("mallory")
        let first = try await w.token(session, body: ["force_refresh": true])
        try expectStatus(first, 409)
        #expect(first["error"] as? String == "needs_reauth" && first["state"] as? String == "needs_reauth")
        let calls = try await w.idp.stats(client: w.idpClientID).refreshCalls
        for replica in [0, 1, 0] {
            try expectStatus(try await w.token(session, replica: replica, body: ["force_refresh": true]), 409)
        }
        #expect(try await w.idp.stats(client: w.idpClientID).refreshCalls == calls)
        let meta = try await HTTP.get(w.brokers[1].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey)
        #expect(meta["state"] as? String == "needs_reauth")
    }

    @Test("an API key with expires_in is refused once expired; the listing shows its last use and expiry, never a secret")
    func expiringKeys() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let session = try await w.importSession(subject: "expiring")
        let t0 = Date()
        let created = try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey,
                                          json: ["name": "short", "roles": ["worker"], "tenants": [w.tenant], "expires_in": 3])
        try expectStatus(created, 201)
        let key = created["key"] as! String, id = created["id"] as! String
        TestEnv.secret(key)
        #expect(created["expires_at"] is String)
        try expectStatus(try await w.token(session, key: key), 200)
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/apikeys", key: key), 403)   // a worker key lists nothing
        // The use reaches the listing with the next bulk write of last_used_at, even when the
        // key's creation notice reaches the replica after the use (it drops the cached entry).
        var listed: [String: Any]?
        for _ in 0..<40 where (listed?["last_used_at"] as? String) == nil {
            try await Task.sleep(for: .milliseconds(100))
            let all = try await HTTP.get(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey)
            try expectStatus(all, 200)
            listed = (all["keys"] as? [[String: Any]])?.first { $0["id"] as? String == id }
            #expect(!all.text.contains(key) && !all.text.contains("secret_hash"))
        }
        #expect(listed?["last_used_at"] is String && listed?["expires_at"] as? String == created["expires_at"] as? String,
                "\(String(describing: listed))")
        while Date() < t0.addingTimeInterval(3.3) { try await Task.sleep(for: .milliseconds(100)) }   // expires_in 3 s
        try expectStatus(try await w.token(session, key: key), 401)
        try expectStatus(try await w.token(session, replica: 1, key: key), 401)
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey,
                                             json: ["name": "x", "roles": ["worker"], "tenants": [w.tenant], "expires_in": 0]), 400)
        let cli = try runCommand("tokenbroker", ["apikey", "list"], env: w.env)
        #expect(cli.status == 0 && cli.out.split(separator: "\n").contains { $0.contains("\"id\":\"\(id)\"") } && !cli.out.contains(key))
    }

    @Test("every log line is JSON with OpenTelemetry's names and typed fields; request lines name the tenant and key id; a huge path is cut")
    func logLines() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "logged")
        try expectStatus(try await w.token(session), 200)
        // 12,000 bytes fit the 16 KiB request-line-and-headers buffer; 20,000 do not (414 from libmicrohttpd).
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/" + String(repeating: "x", count: 12_000), key: w.workerKey), 404)
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/" + String(repeating: "x", count: 20_000), key: w.workerKey), 414)
        try await Task.sleep(for: .milliseconds(200))
        var requests: [[String: Any]] = []
        for line in w.brokers[0].process.output.split(separator: "\n") where line.hasPrefix("{") {
            let doc = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line.prefix(200))")
            #expect(doc["timestamp"] is String && doc["severity_text"] is String && doc["body"] is String, "\(line.prefix(200))")
            #expect(line.count < 4096, "a log line of \(line.count) characters")
            if doc["body"] as? String == "request" { requests.append(doc) }
        }
        let token = try #require(requests.first { ($0["path"] as? String)?.hasSuffix("/token") == true })
        #expect(token["status"] as? Int == 200 && token["ms"] is Double && token["tenant"] as? String == w.tenant && token["key_id"] is String,
                "\(token)")
        let huge = try #require(requests.first { ($0["path"] as? String)?.contains("bytes)") == true })
        #expect(huge["status"] as? Int == 404 && (huge["path"] as? String)?.count ?? 0 < 600)
    }

    @Test("a key rotated with an overlap: the new secret at once on every replica, the old one until the overlap ends, same id")
    func rotatedKeys() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let session = try await w.importSession(subject: "rotating-key")
        let created = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey,
                                                           json: ["name": "rotated", "roles": ["worker"], "tenants": [w.tenant]]), 201)
        let old = created["key"] as! String, id = created["id"] as! String
        TestEnv.secret(old)
        for r in 0..<2 { try expectStatus(try await w.token(session, replica: r, key: old), 200) }   // known to both replicas
        let t0 = Date()
        let rotated = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys/\(id)/rotate", key: w.operatorKey,
                                                           json: ["overlap_seconds": 2]), 200)
        let new = rotated["key"] as! String
        TestEnv.secret(new)
        #expect(rotated["id"] as? String == id && new != old && rotated["previous_valid_until"] is String)
        for r in 0..<2 {
            try expectStatus(try await w.token(session, replica: r, key: new), 200)
            try expectStatus(try await w.token(session, replica: r, key: old), 200)
        }
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys/\(id)/rotate", key: w.operatorKey,
                                             json: ["overlap_seconds": 8 * 86_400]), 400)
        // A retried or second rotation must not cut the overlap the first one promised.
        let again = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys/\(id)/rotate", key: w.operatorKey,
                                                         json: ["overlap_seconds": 60]), 409)
        #expect(again["error"] as? String == "rotation_in_progress")
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys/ffffffffffffffff/rotate", key: w.operatorKey, json: [:]), 404)
        while Date() < t0.addingTimeInterval(2.3) { try await Task.sleep(for: .milliseconds(100)) }
        for r in 0..<2 {
            try expectStatus(try await w.token(session, replica: r, key: old), 401)
            try expectStatus(try await w.token(session, replica: r, key: new), 200)
        }
        let cli = try runCommand("tokenbroker", ["apikey", "rotate", id, "--overlap", "0"], env: w.env)
        #expect(cli.status == 0 && cli.out.hasPrefix("tbk_\(id)_"), "\(cli.err)")
        TestEnv.secret(cli.out.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("a session sealed under a key a replica lacks (a rotation rolling out) is 503 sealing_key_unavailable naming the key there, never a 500")
    func missingSealingKey() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "rotating")
        try expectStatus(try await w.token(session), 200)
        // A replica already rolled out: k2 seals, k1 still opens.
        var rotated = w.env
        rotated["TOKENBROKER_SEALING_KEYS"] = "k2:" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() + ","
            + (w.env["TOKENBROKER_SEALING_KEYS"] ?? "")
        w.brokers.append(try await BrokerServer(env: rotated, name: "broker-k2"))
        try expectStatus(try await w.token(session, replica: 1, body: ["min_ttl": 60, "force_refresh": true]), 200)   // written under k2
        var r = try await w.token(session)
        for _ in 0..<40 where r.status == 200 {   // until replica 0 hears of the write and re-reads the row
            try await Task.sleep(for: .milliseconds(50))
            r = try await w.token(session)
        }
        #expect(r.status == 503 && r["error"] as? String == "sealing_key_unavailable" && (r["message"] as? String ?? "").contains("'k2'"), "\(r.text)")
        try expectStatus(try await w.token(session, replica: 1), 200)   // the rolled-out replica serves it
        let log = try String(contentsOf: w.brokers[0].process.log, encoding: .utf8)
        #expect(log.contains("\"error\":\"sealing_key_unavailable\"") && log.contains("'k2'"))
    }

    @Test("a batch answers each item on its own")
    func batch() async throws {
        let w = try await World()
        defer { w.stop() }
        let good = try await w.importSession(subject: "alice")
        let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/tokens:batch", key: w.workerKey, json: [
            "min_ttl": 60,
            "items": [["session_id": good], ["session_id": "ses_missing"], ["subject": "alice", "client": w.client], ["subject": "alice"], [:]],
        ])
        try expectStatus(r, 200)
        #expect(r.headers["cache-control"] == "no-store" && r.headers["pragma"] == "no-cache", "a batch carries tokens")
        let results = r["results"] as! [[String: Any]]
        #expect(results.map { $0["status"] as? Int } == [200, 404, 200, 400, 400])
        #expect(results[0]["access_token"] as? String == results[2]["access_token"] as? String)
        #expect(results[1]["error"] as? String == "not_found")
        let tooMany = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/tokens:batch", key: w.workerKey,
                                          json: ["items": Array(repeating: ["session_id": good], count: 1001)])
        try expectStatus(tooMany, 400)
    }
}

/// Runs one SQL statement through psql against the test database (or `url`) and returns its output.
func runPSQL(_ sql: String, url: String? = nil) throws -> String {
    try runTool("/usr/bin/psql", [try url ?? TestEnv.databaseURL(), "-Atqc", sql])
}

/// Runs a PostgreSQL client tool and returns what it printed.
func runTool(_ path: String, _ args: [String]) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let d = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: d, as: UTF8.self)
}
