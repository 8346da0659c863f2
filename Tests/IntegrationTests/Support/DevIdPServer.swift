import BrokerCore
import BrokerCrypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// DevIdPServer is a running `dev-idp`, driven over HTTP exactly like a real provider, plus its
/// test controls (client registration, failure switches, stats).
final class DevIdPServer: @unchecked Sendable {
    let port: UInt16
    let process: ManagedProcess
    var issuer: String { "http://127.0.0.1:\(port)" }

    init(accessTTL: Int = 3600) async throws {
        port = TestEnv.freePort()
        process = try ManagedProcess("dev-idp", ["--listen", "127.0.0.1:\(port)", "--access-ttl", String(accessTTL)],
                                     env: [:], logName: TestEnv.uniqueName("dev-idp"))
        try await waitReady("http://127.0.0.1:\(port)/.well-known/openid-configuration", process)
    }

    func registerClient(_ id: String, secret: String?, redirectURI: String, accessTTL: Int = 3600, idTokenAlg: String = "ES256",
                        jwks: Any? = nil, dpopRequired: Bool = false) async throws {
        var body: [String: Any] = ["client_id": id, "redirect_uris": [redirectURI], "access_ttl": accessTTL, "id_token_alg": idTokenAlg,
                                   "dpop_required": dpopRequired]
        if let secret { body["client_secret"] = secret; TestEnv.secret(secret) }
        if let jwks { body["jwks"] = jwks }
        let r = try await HTTP.post(issuer + "/admin/clients", json: body)
        precondition(r.status == 201)
    }

    /// Signs `subject` in through authorize + code exchange (PKCE S256), as an app would.
    func login(client: String, secret: String, redirectURI: String, subject: String,
               scope: String = "openid offline_access") async throws -> (access: String, refresh: String, expiresIn: Int) {
        var rng = SystemRandomNumberGenerator()
        let verifier = Identifiers.token(bytes: 32, using: &rng)
        let challenge = Base64URL.encode(try SHA256.hash(verifier))
        var q = URLComponents(string: issuer + "/authorize")!
        q.queryItems = [.init(name: "response_type", value: "code"), .init(name: "client_id", value: client),
                        .init(name: "redirect_uri", value: redirectURI), .init(name: "scope", value: scope),
                        .init(name: "state", value: "st"), .init(name: "code_challenge", value: challenge),
                        .init(name: "code_challenge_method", value: "S256"), .init(name: "login_hint", value: subject)]
        let a = try await HTTP.get(q.url!.absoluteString)
        guard a.status == 303, let loc = a.headers["location"], let code = URLComponents(string: loc)?.queryItems?.first(where: { $0.name == "code" })?.value else {
            throw TestEnv.Missing(description: "authorize did not redirect with a code: \(a.status)")
        }
        var req = URLRequest(url: URL(string: issuer + "/token")!)
        req.httpMethod = "POST"
        req.setValue("Basic " + Data("\(client):\(secret)".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        req.httpBody = Data("grant_type=authorization_code&code=\(code)&redirect_uri=\(redirectURI.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&code_verifier=\(verifier)".utf8)
        let (data, _) = try await HTTP.session.data(for: req)
        let t = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        let access = t["access_token"] as! String, refresh = t["refresh_token"] as! String
        TestEnv.secret(access)
        TestEnv.secret(refresh)
        return (access, refresh, t["expires_in"] as! Int)
    }

    struct Stats {
        let refreshCalls: Int
        let refreshesOK: Int
        let reuseDetected: Int
        /// When each subject's refreshes succeeded.
        let refreshTimes: [String: [Double]]
    }

    func stats(client: String) async throws -> Stats {
        let r = try await HTTP.get(issuer + "/stats?client_id=\(client)&times=1")
        let calls = r["token_calls"] as? [String: Int] ?? [:]
        return Stats(refreshCalls: calls["refresh_token"] ?? 0, refreshesOK: r["refreshes_ok"] as? Int ?? 0,
                     reuseDetected: r["reuse_detected"] as? Int ?? 0,
                     refreshTimes: (r["refresh_times"] as? [String: [Any]] ?? [:]).mapValues { $0.compactMap { ($0 as? NSNumber)?.doubleValue } })
    }

    /// Makes the token endpoint answer the next `count` requests with `status` (and Retry-After).
    func fail(status: Int, retryAfter: Int?, count: Int, endpoint: String = "token", delayMS: Int = 0) async throws {
        var body: [String: Any] = ["status": status, "count": count, "endpoint": endpoint, "delay_ms": delayMS]
        if let retryAfter { body["retry_after"] = retryAfter }
        _ = try await HTTP.post(issuer + "/admin/failures", json: body)
    }

    /// Makes the client's next `count` responses misbehave in one way (see the IdP's Misbehaviour).
    func misbehave(_ client: String, _ mode: String, count: Int = 1) async throws {
        let r = try await HTTP.post(issuer + "/admin/misbehave", json: ["client_id": client, "mode": mode, "count": count])
        precondition(r.status == 200, "unknown misbehaviour \(mode)")
    }

    /// Grants for many subjects at once (as if each had signed in): subject → refresh token.
    func grants(client: String, subjects: [String]) async throws -> [String: String] {
        let r = try await HTTP.post(issuer + "/admin/grants", json: ["client_id": client, "subjects": subjects])
        let tokens = r["refresh_tokens"] as? [String: String] ?? [:]
        for t in tokens.values { TestEnv.secret(t) }
        return tokens
    }

    /// New signing keys at the IdP; the old ones leave the JWKS.
    func rotateKeys() async throws {
        _ = try await HTTP.post(issuer + "/admin/rotate-keys", json: [:])
    }

    /// The raw counters of one client (token_calls, jwks_fetches, client_assertions, …).
    func counters(client: String) async throws -> [String: Any] {
        try await HTTP.get(issuer + "/stats?client_id=\(client)").json
    }

    /// Revokes every grant of `subject` at the IdP (as an IdP admin would): the next refresh gets invalid_grant.
    func revokeSubject(_ subject: String) async throws {
        _ = try await HTTP.post(issuer + "/admin/revoke-subject", json: ["sub": subject])
    }

    /// Presents a refresh token directly to the IdP (a replay, when the broker already spent it).
    func refreshDirectly(client: String, secret: String, refreshToken: String) async throws -> Int {
        var req = URLRequest(url: URL(string: issuer + "/token")!)
        req.httpMethod = "POST"
        req.setValue("Basic " + Data("\(client):\(secret)".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        req.httpBody = Data("grant_type=refresh_token&refresh_token=\(refreshToken)".utf8)
        let (_, r) = try await HTTP.session.data(for: req)
        return (r as! HTTPURLResponse).statusCode
    }
}

/// Waits until `url` answers, failing with the process log when the process died.
func waitReady(_ url: String, _ p: ManagedProcess, timeout: TimeInterval = 20) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if !p.isRunning { throw TestEnv.Missing(description: "process exited: \(p.output)") }
        if let r = try? await HTTP.get(url), r.status < 500 { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw TestEnv.Missing(description: "\(url) not ready after \(timeout)s: \(p.output)")
}
