import Foundation
import Testing

/// World is one test's whole installation: the development IdP, broker replicas sharing one
/// database and sealing key, a fresh tenant with a client registered at the IdP, and keys:
/// an all-tenant operator key (from the CLI, where the first one comes from) and a
/// worker+admin key of the tenant.
final class World: @unchecked Sendable {
    let idp: DevIdPServer
    var brokers: [BrokerServer] = []
    let env: [String: String]
    let tenant: String
    let client = "app"
    let idpClientID: String
    let idpSecret: String
    let operatorKey: String
    var workerKey: String = ""
    /// The broker's callback, registered at the IdP (any replica serves it).
    var redirectURI: String { brokers[0].url + "/v1/callback" }
    /// Where the broker sends the browser after a login (in the client's allowlist).
    let appURL = "https://app.example/after-login"

    /// `idp`: the development IdP to use (default: a fresh one over HTTP); the brokers trust the
    /// CA of one over HTTPS (`DevIdPServer.providerEnv`).
    init(replicas: Int = 1, accessTTL: Int = 3600, extraEnv: [String: String] = [:], idp given: DevIdPServer? = nil) async throws {
        if let given { idp = given } else { idp = try await DevIdPServer() }
        let key = "k1:" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var e = ["DATABASE_URL": try TestEnv.databaseURL(), "TOKENBROKER_SEALING_KEYS": key, "TOKENBROKER_LOG_LEVEL": "debug",
                 "TOKENBROKER_ACCESS_LOG": "true", "TOKENBROKER_WORKER_THREADS": "16"]
        for (k, v) in idp.providerEnv { e[k] = v }
        for (k, v) in extraEnv { e[k] = v }
        env = e
        let migrate = try runCommand("tokenbroker", ["migrate"], env: env)
        guard migrate.status == 0 else { throw TestEnv.Missing(description: "migrate failed: \(migrate.err)") }
        // The broker's own keys are one set per installation, sealed with its sealing key; each
        // World is an installation of its own (its own sealing key) on the shared database.
        _ = try runPSQL("DELETE FROM broker_keys", url: env["DATABASE_URL"])
        let created = try runCommand("tokenbroker", ["apikey", "create", "--role", "operator", "--name", "test-operator", "--all-tenants"], env: env)
        guard created.status == 0 else { throw TestEnv.Missing(description: "apikey create failed: \(created.err)") }
        operatorKey = created.out.trimmingCharacters(in: .whitespacesAndNewlines)
        TestEnv.secret(operatorKey)
        for i in 0..<replicas { brokers.append(try await BrokerServer(env: env, name: "broker\(i)")) }

        tenant = TestEnv.uniqueName("t")
        idpClientID = TestEnv.uniqueName("client")
        idpSecret = "secret-" + UUID().uuidString
        try await idp.registerClient(idpClientID, secret: idpSecret, redirectURI: redirectURI, accessTTL: accessTTL)
        let b = brokers[0].url
        try await expectStatus(HTTP.put(b + "/v1/tenants/\(tenant)", key: operatorKey, json: ["name": "Test tenant"]), 201)
        try await expectStatus(HTTP.put(b + "/v1/tenants/\(tenant)/clients/\(client)", key: operatorKey, json: [
            "issuer": idp.issuer, "client_id": idpClientID, "auth_method": "client_secret_basic", "client_secret": idpSecret,
            "redirect_uri": redirectURI, "scopes": ["openid", "offline_access"], "redirect_after_allowed": [appURL]]), 201)
        workerKey = try await newKey(roles: ["worker", "admin", "enrol"], tenants: [tenant])
    }

    func newKey(roles: [String], tenants: [String]) async throws -> String {
        let r = try await HTTP.post(brokers[0].url + "/v1/apikeys", key: operatorKey, json: ["name": "k", "roles": roles, "tenants": tenants])
        try expectStatus(r, 201)
        let key = r["key"] as! String
        TestEnv.secret(key)
        return key
    }

    /// Signs `subject` in at the IdP and imports the grant; the imported access token is said to
    /// expire in `expiresIn` seconds (so that a test can make it "expiring").
    func importSession(subject: String, expiresIn: TimeInterval = 3000) async throws -> String {
        let t = try await idp.login(client: idpClientID, secret: idpSecret, redirectURI: redirectURI, subject: subject)
        let expires = ISO8601DateFormatter().string(from: Date().addingTimeInterval(expiresIn))
        let r = try await HTTP.post(brokers[0].url + "/v1/tenants/\(tenant)/sessions:import", key: workerKey, json: [
            "client": client, "subject": subject, "refresh_token": t.refresh, "access_token": t.access, "expires_at": expires])
        try expectStatus(r, 201)
        return r["session_id"] as! String
    }

    func token(_ session: String, replica: Int = 0, body: [String: Any] = ["min_ttl": 60], key: String? = nil) async throws -> HTTP.Reply {
        let r = try await HTTP.post(brokers[replica].url + "/v1/tenants/\(tenant)/sessions/\(session)/token", key: key ?? workerKey, json: body)
        if let at = r["access_token"] as? String {
            TestEnv.secret(at)
            if r.status == 200 { HandOutLife.check(r.json, minTTL: (body["min_ttl"] as? NSNumber)?.doubleValue) }
        }
        return r
    }

    func stop() {
        for b in brokers { b.stop() }
        idp.process.stop()
    }

    deinit { stop() }
}

struct UnexpectedStatus: Error, CustomStringConvertible {
    let description: String
}

@discardableResult
func expectStatus(_ r: HTTP.Reply, _ status: Int) throws -> HTTP.Reply {
    // Only the status and the error code: a body can hold a token, and this text reaches the test output.
    guard r.status == status else {
        throw UnexpectedStatus(description: "expected \(status), got \(r.status) (error: \(r["error"] as? String ?? "none"))")
    }
    return r
}
