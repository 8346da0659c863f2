import BrokerCore
import BrokerCrypto
import Foundation

/// Driving the development IdP's personalities over HTTP, as each provider's client would.
extension DevIdPServer {
    /// Every personality's endpoints (`GET /p`), by name.
    func personalities() async throws -> [String: [String: Any]] {
        let r = try await call("GET", issuer + "/p")
        return (try JSONSerialization.jsonObject(with: r.data) as? [String: [String: Any]]) ?? [:]
    }

    /// Registers a client usable with every personality, without a lifetime of its own (each
    /// personality's applies); `settings` are more members of `POST /admin/clients`
    /// (`token_rotation`: an app with Slack's token rotation on).
    func registerPersonalityClient(_ id: String, secret: String, redirectURI: String, settings: [String: Any] = [:]) async throws {
        TestEnv.secret(secret)
        let body: [String: Any] = ["client_id": id, "client_secret": secret, "redirect_uris": [redirectURI]]
        let r = try await call("POST", issuer + "/admin/clients", json: body.merging(settings) { a, _ in a })
        precondition(r.status == 201)
    }

    /// Approves `subject` at an authorization endpoint; the parameters of the redirect back
    /// (`code`, `state`, …), or of the refusal. With `verifier`, PKCE S256 is sent.
    func authorize(_ endpoint: String, client: String, redirectURI: String, subject: String, params: [String: String] = [:],
                   verifier: String? = nil) async throws -> [String: String] {
        var q = URLComponents(string: endpoint)!
        var items = ["response_type": "code", "client_id": client, "redirect_uri": redirectURI, "state": "st-1", "login_hint": subject]
        if let verifier {
            items["code_challenge"] = Base64URL.encode(try SHA256.hash(verifier))
            items["code_challenge_method"] = "S256"
        }
        for (k, v) in params { items[k] = v }
        q.queryItems = items.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        let r = try await call("GET", q.url!.absoluteString)
        guard r.status == 303, let location = r.headers["location"], let back = URLComponents(string: location) else {
            throw TestEnv.Missing(description: "authorize did not redirect: \(r.status) \(r.text)")
        }
        return Dictionary((back.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
    }

    /// POSTs `fields` as a form (or, with `json`, a JSON object), with the client's credentials
    /// in HTTP Basic when `basic` is given.
    func post(_ url: String, _ fields: [String: String], basic: (String, String)? = nil, json: Bool = false,
              headers: [String: String] = [:], method: String = "POST") async throws -> HTTP.Reply {
        var h = headers
        if let (id, secret) = basic { h["Authorization"] = "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString() }
        if json { return try await call(method, url, json: fields, headers: h) }
        h["Content-Type"] = "application/x-www-form-urlencoded"
        return try await call(method, url, body: Data(FormEncoding.body(fields.sorted { $0.key < $1.key }).utf8), headers: h)
    }
}

extension HTTP.Reply {
    /// A form-encoded body's members.
    var form: [String: String] { FormEncoding.decode(Array(data)) }

    /// The members of a token answer, form-encoded or JSON, as text.
    var members: [String: String] {
        if headers["content-type"]?.hasPrefix("application/x-www-form-urlencoded") == true { return form }
        return json.compactMapValues { v in v is NSNull || v is [String: Any] ? nil : (v as? String) ?? "\(v)" }
    }
}

/// The claims of a compact JWS, unverified (tests read what the IdP put in).
func jwtClaims(_ jwt: String) -> [String: Any] {
    let parts = jwt.split(separator: ".")
    guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])) else { return [:] }
    return (try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]) ?? [:]
}
