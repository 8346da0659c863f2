import BrokerCore
import Foundation

/// What only some providers need: the user's id from a "who am I" call, and a revocation
/// request of the provider's own making — both described by the client's provider descriptor.
extension OIDCTokenEndpoint {
    /// The user's id at the provider: the descriptor's "who am I" call (or the userinfo
    /// endpoint) with the new access token as a bearer token (RFC 6750 §2.1), and the pointer into
    /// its JSON answer (GitHub: `GET /user`, `/id`; numbers as their decimal text).
    public func userID(client: ClientRegistration, accessToken: String) throws(TokenEndpointError) -> String {
        let source = client.descriptor.subjectSource
        let meta = try metadata.metadata(for: client, now: clock.now())
        let named = source.url.flatMap { URL(string: $0.replacingOccurrences(of: "{token}", with: Self.pathSegment(accessToken))) }
        guard let url = named ?? meta.userinfoEndpoint else { throw .metadata("the provider has no userinfo endpoint to learn the user's id from") }
        let reply: BlockingHTTP.Reply, trust = try trust(for: client)
        do {
            // A User-Agent: some APIs (GitHub's) refuse requests without one.
            reply = try http.send(source.method, url, headers: ["Authorization: Bearer " + accessToken, "Accept: application/json",
                                                                "User-Agent: tokenbroker"] + client.descriptor.headerLines,
                                  body: source.method == "GET" ? nil : [], trust: trust)
        } catch {
            throw Self.transport(error, "userinfo")
        }
        // The issuer's own userinfo endpoint shares its nonce (glewlwyd's does); a provider's
        // "who am I" API is a resource server, whose nonces are not the authorization server's.
        if named == nil, let n = reply.dpopNonce { nonces.learn(n, from: .userinfo, client: client, now: clock.now()) }
        if reply.status >= 500 || reply.status == 429 { throw .transient(reason: "userinfo: HTTP \(reply.status)", retryAfter: reply.retryAfter) }
        guard reply.status == 200 else { throw .invalidResponse("userinfo: HTTP \(reply.status) for the new access token") }
        guard let doc = try? JSONSerialization.jsonObject(with: reply.body), let id = source.pointer.text(in: doc), !id.isEmpty, id.utf8.count <= 255 else {
            throw .invalidResponse("userinfo: no user id at \(source.pointer)")
        }
        return id
    }

    /// A revocation request as the descriptor describes it: method and URL (`{client_id}` put
    /// in), the token in a form, a JSON object, the query or as a bearer token, the client's id
    /// and secret in HTTP Basic or the body, success by status. When the descriptor names which
    /// token to send, the session's other token is not sent: revoking the one ends the grant.
    func described(_ client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) {
        let r = client.descriptor.revocation
        guard let template = r.url,
              var components = URLComponents(string: template.replacingOccurrences(of: "{client_id}", with: Self.pathSegment(client.clientID))
                .replacingOccurrences(of: "{token}", with: r.tokenIn == .path ? Self.pathSegment(token) : "{token}")) else {
            throw .metadata("the provider descriptor gives no revocation url")
        }
        var headers = ["Accept: application/json", "User-Agent: tokenbroker"] + client.descriptor.headerLines
        var form: [(String, String)] = []
        var json: [String: String] = [:]
        switch r.tokenIn {
        case .form(let name): form.append((name, token))
        case .json(let name): json[name] = token
        case .query(let name): components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: name, value: token)]
        case .bearer: headers.append("Authorization: Bearer " + token)
        case .path: break
        }
        switch r.clientAuth {
        case .none: break
        case .basic:
            let pair = FormEncoding.encode(client.clientID) + ":" + FormEncoding.encode(try clientSecret(client))
            if case .bearer = r.tokenIn { throw .metadata("a revocation cannot carry both a bearer token and HTTP Basic") }
            headers.append("Authorization: Basic " + Data(pair.utf8).base64EncodedString())
        case .form:
            let secret = try clientSecret(client)
            if case .json = r.tokenIn { json["client_id"] = client.clientID; json["client_secret"] = secret } else {
                form += [("client_id", client.clientID), ("client_secret", secret)]
            }
        }
        var body: [UInt8]? = nil
        if !json.isEmpty {
            headers.append("Content-Type: application/json")
            body = Array(ProviderDescriptor.canonical(json).utf8)
        } else if !form.isEmpty {
            headers.append("Content-Type: application/x-www-form-urlencoded")
            body = Array(FormEncoding.body(form).utf8)
        } else if r.method != "GET" {
            body = []
        }
        guard let url = components.url else { throw .metadata("the provider descriptor's revocation url is not a URL") }
        let reply: BlockingHTTP.Reply, trust = try trust(for: client)
        do { reply = try http.send(r.method, url, headers: headers, body: body, trust: trust) } catch {
            throw Self.transport(error, "revocation")
        }
        if r.success.contains(reply.status) {
            // A refusal that comes with a success status (Slack's {"ok": false}).
            if let ok = client.descriptor.tokenResponse.okPointer, let doc = try? JSONSerialization.jsonObject(with: reply.body), ok.bool(in: doc) == false {
                throw .invalidResponse("revocation: the provider answered ok: false")
            }
            return
        }
        if reply.status >= 500 || reply.status == 429 { throw .transient(reason: "revocation: HTTP \(reply.status)", retryAfter: reply.retryAfter) }
        throw .invalidResponse("revocation: HTTP \(reply.status)")
    }

    /// A value put in a URL's path: every byte but RFC 3986's unreserved ones percent-encoded.
    static func pathSegment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? ""
    }

    /// A transport failure of a call that spends nothing (may be repeated).
    static func transport(_ error: BlockingHTTP.Failure, _ what: String) -> TokenEndpointError {
        switch error {
        case .notSent(let why), .unanswered(let why): .transient(reason: "\(what): \(why)", retryAfter: nil)
        case .certificateRefused(let why): .certificateRefused("\(what): \(why)")
        case .tooLarge: .invalidResponse("\(what): response too large")
        }
    }
}
