import Foundation
import Testing

@Suite("No secret in logs or in plain text in the database", .serialized)
struct SecretsTests {
    @Test("after a full scenario, no token, key or client secret appears in any log or in a database dump")
    func noSecretsAnywhere() async throws {
        let w = try await World(replicas: 2)
        var secrets = [w.operatorKey, w.workerKey, w.idpSecret]
        let t = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "sam")
        secrets += [t.access, t.refresh]
        let imported = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey,
                                           json: ["client": w.client, "subject": "sam", "refresh_token": t.refresh])
        let session = try expectStatus(imported, 201)["session_id"] as! String
        for replica in [0, 1] {
            let r = try await w.token(session, replica: replica, body: ["force_refresh": true])
            secrets.append(r["access_token"] as! String)
        }
        // Error paths that carry secrets in their input must not echo or log them.
        let leaky = "{\"refresh_token\": \"\(t.refresh)\", \"min_ttl\": "
        let bad = try await HTTP.request("POST", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, body: Data(leaky.utf8))
        // Containment is evaluated outside #expect, whose failure report would print the secret.
        let echoedRefresh = bad.text.contains(t.refresh)
        #expect(bad.status == 400 && !echoedRefresh, "an error echoed the refresh token")
        let wrongKey = try await HTTP.post(w.brokers[1].url + "/v1/tenants/\(w.tenant)/sessions/\(session)/token", key: w.workerKey + "x", json: [:])
        let echoedKey = wrongKey.text.contains(w.workerKey)
        #expect(wrongKey.status == 401 && !echoedKey, "an error echoed the API key")
        try await w.idp.revokeSubject("sam")
        _ = try await w.token(session, body: ["force_refresh": true])
        w.stop()

        let logs = w.brokers.map(\.process.output).joined()
        #expect(logs.contains("\"body\":\"request\""), "the brokers logged requests")
        let inLogs = secrets.indices.filter { logs.contains(secrets[$0]) }
        #expect(inLogs.isEmpty, "secrets #\(inLogs) appear in a broker log")
        let dump = try pgDump()
        #expect(dump.contains(session), "the dump covers the session")
        let inDump = secrets.indices.filter { dump.contains(secrets[$0]) }
        #expect(inDump.isEmpty, "secrets #\(inDump) appear in plain text in the database")
    }
}

/// A plain-text dump of the test database's data.
func pgDump() throws -> String {
    try runTool("/usr/bin/pg_dump", ["--data-only", "--dbname", try TestEnv.databaseURL()])
}
