import Foundation

/// Glewlwyd is one of the glewlwyd 2.7.5 servers (Debian's package) that scripts/glewlwyd.sh
/// started for `make test`: `plain` (HTTP; DPoP nonces and pushed authorization requests
/// required) or `tls` (HTTPS asking for client certificates; RFC 8705). Its admin API, its login
/// API (the user's browser) and its log are driven through curl, as a person would.
struct Glewlwyd: Sendable {
    /// The folder of scripts/glewlwyd.sh (pki/, the logs, the URLs), or nil outside `make test`.
    static var dir: URL? {
        guard ProcessInfo.processInfo.environment["TOKENBROKER_TEST_GLEWLWYD_URL"] != nil else { return nil }
        return ProcessInfo.processInfo.environment["TOKENBROKER_TEST_GLEWLWYD_DIR"].map { URL(fileURLWithPath: $0) }
            ?? TestEnv.root.appendingPathComponent(".run/glewlwyd")
    }

    let name: String
    let dir: URL
    /// `scheme://127.0.0.1:port`.
    let base: String

    init(_ name: String) throws {
        guard let d = Self.dir else { throw TestEnv.Missing(description: "TOKENBROKER_TEST_GLEWLWYD_URL is not set") }
        self.name = name
        dir = d
        base = try String(contentsOf: d.appendingPathComponent("\(name).url"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var issuer: String { base + "/api/oidc" }
    var pki: URL { dir.appendingPathComponent("pki") }
    /// The CA of the HTTPS server's certificate (what the broker must trust for it).
    var serverCA: String { pki.appendingPathComponent("server-ca.pem").path }
    var log: URL { dir.appendingPathComponent("\(name).log") }

    /// glewlwyd's log so far (DEBUG level).
    func logText() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Proofs glewlwyd refused for their nonce: its `oidc_verify_dpop_proof - Invalid nonce` lines.
    func refusedNonces() -> Int { logText().components(separatedBy: "oidc_verify_dpop_proof - Invalid nonce").count - 1 }

    /// One HTTP call through curl; `jar`: a cookie file (the admin's or the user's browser);
    /// `cert`: a client certificate and key (paths).
    func call(_ method: String, _ url: String, json: Any? = nil, form: [(String, String)]? = nil, jar: String? = nil,
              basic: (String, String)? = nil, headers: [String: String] = [:], cert: (String, String)? = nil) async throws -> HTTP.Reply {
        var args = ["-s", "-S", "-i", "--max-time", "30", "-X", method]
        if base.hasPrefix("https") { args += ["--cacert", serverCA] }
        if let jar { args += ["-b", jar, "-c", jar] }
        if let basic { args += ["-u", "\(basic.0):\(basic.1)"] }
        if let cert { args += ["--cert", cert.0, "--key", cert.1] }
        for (k, v) in headers { args += ["-H", "\(k): \(v)"] }
        var input: Data?
        if let json {
            input = try JSONSerialization.data(withJSONObject: json)
            args += ["-H", "Content-Type: application/json"]
        } else if let form {
            input = Data(FormBody.encode(form).utf8)
            args += ["-H", "Content-Type: application/x-www-form-urlencoded"]
        }
        if input != nil { args += ["--data-binary", "@-"] }
        let (status, out, err) = try await CurlHTTP.run(args + [url], stdin: input)
        guard status == 0 else { throw TestEnv.Missing(description: "curl \(method) \(url) failed (\(status)): \(err)") }
        return try CurlHTTP.parse(out)
    }

    private var adminJar: String { dir.appendingPathComponent("\(name).admin.jar").path }

    /// A call of the admin API (`/api…`), signed in as Debian's default admin (again when its
    /// sign-in is older than the `g_admin` scope's 10 minutes).
    @discardableResult
    func admin(_ method: String, _ path: String, _ json: Any? = nil) async throws -> HTTP.Reply {
        var r = try await call(method, base + "/api" + path, json: json, jar: adminJar)
        if r.status == 401 {
            _ = try await call("POST", base + "/api/auth/", json: ["username": "admin", "password": "password"], jar: adminJar)
            r = try await call(method, base + "/api" + path, json: json, jar: adminJar)
        }
        guard r.status == 200 else { throw UnexpectedStatus(description: "glewlwyd admin \(method) \(path): \(r.status) \(r.text.prefix(300))") }
        return r
    }

    /// Registers (or replaces) an OpenID Connect client; `extra`: its auth method's members.
    func registerClient(_ id: String, secret: String?, redirectURI: String, extra: [String: Any] = [:]) async throws {
        var c: [String: Any] = ["client_id": id, "name": id, "confidential": true, "redirect_uri": [redirectURI],
                                "authorization_type": ["code", "refresh_token"], "scope": ["openid"], "enabled": true]
        if let secret { c["client_secret"] = secret; c["token_endpoint_auth_method"] = ["client_secret_basic"] }
        for (k, v) in extra { c[k] = v }
        if (try? await admin("GET", "/client/\(id)")) != nil { try await admin("PUT", "/client/\(id)", c) } else { try await admin("POST", "/client", c) }
    }

    /// The user's browser: the authorization URL sends it to glewlwyd's login page; alice signs
    /// in through the login API, grants `openid` to the client, and the page's "continue" (the
    /// authorization URL again, with `g_continue`) redirects to the broker's callback — returned.
    func authorize(_ authorizationURL: String, client: String) async throws -> String {
        let jar = dir.appendingPathComponent("alice-\(UUID().uuidString.prefix(8)).jar").path
        defer { try? FileManager.default.removeItem(atPath: jar) }
        let first = try await call("GET", authorizationURL, jar: jar)
        guard let login = first.headers["location"],
              let callback = URLComponents(string: login)?.queryItems?.first(where: { $0.name == "callback_url" })?.value else {
            throw UnexpectedStatus(description: "glewlwyd's authorization endpoint: \(first.status), no login redirect: \(first.text.prefix(300))")
        }
        let signedIn = try await call("POST", base + "/api/auth/", json: ["username": "alice", "password": "alice-password"], jar: jar)
        guard signedIn.status == 200 else { throw UnexpectedStatus(description: "glewlwyd login API: \(signedIn.status)") }
        let granted = try await call("PUT", base + "/api/auth/grant/\(client)", json: ["scope": "openid"], jar: jar)
        guard granted.status == 200 else { throw UnexpectedStatus(description: "glewlwyd grant: \(granted.status)") }
        let back = try await call("GET", callback + "&g_continue", jar: jar)
        guard let location = back.headers["location"], location.contains("code=") else {
            throw UnexpectedStatus(description: "glewlwyd after sign-in: \(back.status) \(back.headers["location"] ?? back.text.prefix(300).description)")
        }
        for item in URLComponents(string: location)?.queryItems ?? [] where item.name == "code" || item.name == "state" {
            TestEnv.secret(item.value ?? "")
        }
        return location
    }

    /// RFC 7662 at glewlwyd (client authentication by secret, or by certificate at the alias).
    func introspect(_ token: String, client: String, secret: String? = nil, cert: (String, String)? = nil) async throws -> [String: Any] {
        let url = issuer + (cert == nil ? "/introspect" : "/mtls/introspect")
        var form = [("token", token)]
        if cert != nil { form.append(("client_id", client)) }
        let r = try await call("POST", url, form: form, basic: secret.map { (client, $0) }, cert: cert)
        guard r.status == 200 else { throw UnexpectedStatus(description: "glewlwyd introspection: \(r.status) \(r.text.prefix(200))") }
        return r.json
    }
}

/// application/x-www-form-urlencoded (RFC 6749 Appendix B).
enum FormBody {
    static func encode(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return pairs.map { "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
    }
}
