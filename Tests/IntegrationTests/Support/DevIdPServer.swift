import BrokerCore
import BrokerCrypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// DevIdPServer is a running `dev-idp`, driven over HTTP exactly like a real provider, plus its
/// test controls (client registration, failure switches, stats).
///
/// Over HTTPS (`tls`) it serves a certificate of that test CA for `127.0.0.1`, `localhost` and,
/// with `issuerHosts`, `*.<issuerHosts>`; every host `<label>.<issuerHosts>` is then an issuer of
/// its own (`issuer(host:)`), all sharing the clients and grants. A broker reaches them with the
/// CA in TOKENBROKER_PROVIDER_CA_FILE (`providerEnv`); the test controls go through curl.
final class DevIdPServer: @unchecked Sendable {
    let port: UInt16
    let process: ManagedProcess
    /// The CA the server's certificate comes from (nil: plain HTTP).
    let ca: TestCA?
    let issuerHosts: String?
    /// The issuer of requests to 127.0.0.1 (and of the test controls).
    var issuer: String { "\(ca == nil ? "http" : "https")://127.0.0.1:\(port)" }

    /// `clientCA`: mutual-TLS mode (RFC 8705): client certificates are asked for (optional) and
    /// verified against that CA; needs `tls`.
    init(accessTTL: Int = 3600, tls ca: TestCA? = nil, issuerHosts: String? = nil, clientCA: TestCA? = nil) async throws {
        port = TestEnv.freePort()
        self.ca = ca
        self.issuerHosts = issuerHosts
        var args = ["--listen", "127.0.0.1:\(port)", "--access-ttl", String(accessTTL)]
        if let ca {
            let names = ["localhost"] + (issuerHosts.map { ["*." + $0] } ?? [])
            let cert = try ca.issue(TestEnv.uniqueName("dev-idp"), server: true, dnsNames: names)
            args += ["--tls-cert", cert.cert, "--tls-key", cert.key]
        }
        if let issuerHosts { args += ["--issuer-hosts", issuerHosts] }
        if let clientCA { args += ["--tls-client-ca", clientCA.certificate] }
        process = try ManagedProcess("dev-idp", args, env: [:], logName: TestEnv.uniqueName("dev-idp"))
        let curl = ca.map { CurlHTTP(ca: $0.certificate) }
        try await waitReady(issuer + "/.well-known/openid-configuration", process, get: { url in
            if let curl { return try await curl.get(url) }
            return try await HTTP.get(url)
        })
    }

    /// The issuer served at `<label>.<issuerHosts>` (the process must have been started with them).
    func issuer(host label: String) -> String {
        "\(ca == nil ? "http" : "https")://\(label).\(issuerHosts!):\(port)"
    }

    /// What a broker needs to reach this IdP over HTTPS: its CA as the providers' trust.
    var providerEnv: [String: String] { ca.map { ["TOKENBROKER_PROVIDER_CA_FILE": $0.certificate] } ?? [:] }

    /// A request to this IdP: through URLSession over HTTP, through curl with the CA over HTTPS.
    func call(_ method: String, _ url: String, json: Any? = nil, body: Data? = nil, headers: [String: String] = [:]) async throws -> HTTP.Reply {
        if let ca { return try await CurlHTTP(ca: ca.certificate).request(method, url, json: json, body: body, headers: headers) }
        return try await HTTP.request(method, url, json: json, body: body, headers: headers)
    }

    func registerClient(_ id: String, secret: String?, redirectURI: String, accessTTL: Int = 3600, idTokenAlg: String = "ES256",
                        jwks: Any? = nil, dpopRequired: Bool = false, tlsCertificateSHA256: String? = nil,
                        tlsSubjectDN: String? = nil) async throws {
        var body: [String: Any] = ["client_id": id, "redirect_uris": [redirectURI], "access_ttl": accessTTL, "id_token_alg": idTokenAlg,
                                   "dpop_required": dpopRequired]
        if let secret { body["client_secret"] = secret; TestEnv.secret(secret) }
        if let jwks { body["jwks"] = jwks }
        if let tlsCertificateSHA256 { body["tls_client_certificate_sha256"] = tlsCertificateSHA256 }
        if let tlsSubjectDN { body["tls_client_auth_subject_dn"] = tlsSubjectDN }
        let r = try await call("POST", issuer + "/admin/clients", json: body)
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
        let a = try await call("GET", q.url!.absoluteString)
        guard a.status == 303, let loc = a.headers["location"], let code = URLComponents(string: loc)?.queryItems?.first(where: { $0.name == "code" })?.value else {
            throw TestEnv.Missing(description: "authorize did not redirect with a code: \(a.status)")
        }
        let form = "grant_type=authorization_code&code=\(code)&redirect_uri=\(redirectURI.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&code_verifier=\(verifier)"
        let t = try await call("POST", issuer + "/token", body: Data(form.utf8), headers: [
            "Authorization": "Basic " + Data("\(client):\(secret)".utf8).base64EncodedString(),
            "Content-Type": "application/x-www-form-urlencoded"]).json
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
        let r = try await call("GET", issuer + "/stats?client_id=\(client)&times=1")
        let calls = r["token_calls"] as? [String: Int] ?? [:]
        return Stats(refreshCalls: calls["refresh_token"] ?? 0, refreshesOK: r["refreshes_ok"] as? Int ?? 0,
                     reuseDetected: r["reuse_detected"] as? Int ?? 0,
                     refreshTimes: (r["refresh_times"] as? [String: [Any]] ?? [:]).mapValues { $0.compactMap { ($0 as? NSNumber)?.doubleValue } })
    }

    /// Makes the token endpoint answer the next `count` requests with `status` (and Retry-After).
    func fail(status: Int, retryAfter: Int?, count: Int, endpoint: String = "token", delayMS: Int = 0) async throws {
        var body: [String: Any] = ["status": status, "count": count, "endpoint": endpoint, "delay_ms": delayMS]
        if let retryAfter { body["retry_after"] = retryAfter }
        _ = try await call("POST", issuer + "/admin/failures", json: body)
    }

    /// Makes the client's next `count` responses misbehave in one way (see the IdP's Misbehaviour).
    func misbehave(_ client: String, _ mode: String, count: Int = 1) async throws {
        let r = try await call("POST", issuer + "/admin/misbehave", json: ["client_id": client, "mode": mode, "count": count])
        precondition(r.status == 200, "unknown misbehaviour \(mode)")
    }

    /// Grants for many subjects at once (as if each had signed in): subject → refresh token.
    func grants(client: String, subjects: [String], personality: String? = nil) async throws -> [String: String] {
        var body: [String: Any] = ["client_id": client, "subjects": subjects]
        if let personality { body["personality"] = personality }
        let r = try await call("POST", issuer + "/admin/grants", json: body)
        let tokens = r["refresh_tokens"] as? [String: String] ?? [:]
        for t in tokens.values { TestEnv.secret(t) }
        return tokens
    }

    /// New signing keys at the IdP; the old ones leave the JWKS.
    func rotateKeys() async throws {
        _ = try await call("POST", issuer + "/admin/rotate-keys", json: [:])
    }

    /// The raw counters of one client (token_calls, jwks_fetches, client_assertions, …).
    func counters(client: String) async throws -> [String: Any] {
        try await call("GET", issuer + "/stats?client_id=\(client)").json
    }

    /// Revokes every grant of `subject` at the IdP (as an IdP admin would): the next refresh gets invalid_grant.
    func revokeSubject(_ subject: String) async throws {
        _ = try await call("POST", issuer + "/admin/revoke-subject", json: ["sub": subject])
    }

    /// Presents a refresh token directly to the IdP (a replay, when the broker already spent it).
    func refreshDirectly(client: String, secret: String, refreshToken: String) async throws -> Int {
        try await call("POST", issuer + "/token", body: Data("grant_type=refresh_token&refresh_token=\(refreshToken)".utf8), headers: [
            "Authorization": "Basic " + Data("\(client):\(secret)".utf8).base64EncodedString(),
            "Content-Type": "application/x-www-form-urlencoded"]).status
    }
}

/// Waits until `url` answers, failing with the process log when the process died.
func waitReady(_ url: String, _ p: ManagedProcess, timeout: TimeInterval = 20,
               get: (String) async throws -> HTTP.Reply = { try await HTTP.get($0) }) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if !p.isRunning { throw TestEnv.Missing(description: "process exited: \(p.output)") }
        if let r = try? await get(url), r.status < 500 { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw TestEnv.Missing(description: "\(url) not ready after \(timeout)s: \(p.output)")
}
