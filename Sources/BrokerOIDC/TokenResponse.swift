import BrokerCore
import Foundation

/// TokenResponse checks a token-endpoint answer (RFC 6749 §5.1, §5.2) before anything is stored,
/// read as the client's provider descriptor says (`TokenResponseShape`): JSON or form-encoded,
/// the values where its pointers say, `token_type` Bearer or DPoP (case-insensitive, RFC 6749
/// §7.1 / RFC 9449 §5) or the descriptor's default. Classified by status first: 504 (a gateway
/// gave up; the IdP may have acted) is `unanswered`; other 5xx and 429 are transient, with
/// Retry-After honoured when in seconds, whatever the body (often HTML); a 4xx is an RFC 6749
/// §5.2 error when its body says so, else a bare refusal — never an outage. A 200 is a refusal
/// too when the descriptor says its refusals come that way (GitHub's `error=…`, Slack's
/// `{"ok": false, "error": …}`).
enum TokenResponse {
    /// What a token answer is read with: the descriptor's shape, how its scopes are separated,
    /// and where the user's id is when the answer carries it.
    struct Reading {
        var shape = TokenResponseShape()
        var scopeSeparator = " "
        var subject: JSONPointer?
        /// An OpenID answer's ID token is read; a plain OAuth 2.0 provider's answer has none.
        var idToken = true
        /// A refresh's answer: where the descriptor's pointers find nothing, RFC 6749's members
        /// are read (Slack answers a code exchange with the user's token under `authed_user`,
        /// and its refresh with that token at the top level).
        var refreshing = false

        init() {}

        /// `subject`: the answer must carry the user's id where the descriptor says it does (a
        /// code exchange's; a refresh's need not).
        init(_ d: ProviderDescriptor, subject: Bool) {
            shape = d.tokenResponse
            scopeSeparator = d.tokenResponse.scopeSeparator ?? d.authorization.scopeSeparator
            self.subject = subject && d.subjectSource.from == .tokenResponse ? d.subjectSource.pointer : nil
            idToken = d.kind == .oidc
            refreshing = !subject
        }
    }

    /// `endpoint` names the endpoint in failure reasons (the revocation and PAR endpoints answer
    /// errors in the same RFC 6749 §5.2 shape).
    static func parse(_ reply: BlockingHTTP.Reply, endpoint: String = "token endpoint", _ reading: Reading = Reading()) throws(TokenEndpointError) -> TokenGrant {
        if reply.status == 504 { throw .unanswered("\(endpoint): HTTP 504 from a gateway") }
        if reply.status >= 500 || reply.status == 429 {
            throw .transient(reason: "\(endpoint): HTTP \(reply.status)", retryAfter: reply.retryAfter)
        }
        let shape = reading.shape
        let doc = document(reply, shape.format)
        if (400..<500).contains(reply.status) {
            guard let doc, let error = shape.errorPointer.text(in: doc) else {
                throw .refused(status: reply.status, reason: "\(endpoint): HTTP \(reply.status) without an RFC 6749 error")
            }
            throw .oauth(OAuthError(error: error, description: doc["error_description"] as? String, status: reply.status))
        }
        guard reply.status == 200 else { throw .invalidResponse("\(endpoint): unexpected HTTP \(reply.status)") }
        guard let doc else {
            throw .invalidResponse("\(endpoint): response is not a \(shape.format == .form ? "form-encoded" : "JSON") object (HTTP 200)")
        }
        // Refusals that come with 200.
        if let ok = shape.okPointer, ok.bool(in: doc) != true {
            throw .oauth(OAuthError(error: shape.errorPointer.text(in: doc) ?? "unrecognized_error", description: nil, status: 200))
        }
        if shape.errorInOK, let error = shape.errorPointer.text(in: doc) {
            throw .oauth(OAuthError(error: error, description: doc["error_description"] as? String, status: 200))
        }
        let standard = TokenResponseShape()
        /// The descriptor's pointer, or on a refresh's answer where it finds nothing, RFC 6749's.
        func read(_ p: KeyPath<TokenResponseShape, JSONPointer>) -> Any? {
            shape[keyPath: p].value(in: doc) ?? (reading.refreshing ? standard[keyPath: p].value(in: doc) : nil)
        }
        func text(_ p: KeyPath<TokenResponseShape, JSONPointer>) -> String? { read(p).flatMap { JSONPointer("")!.text(in: $0) } }
        guard let access = text(\.accessToken), !access.isEmpty else {
            throw .invalidResponse("\(endpoint): no access token at \(shape.accessToken)")
        }
        let named = text(\.tokenType).flatMap(TokenType.init(named:))
        guard let type = named ?? shape.defaultTokenType else { throw .invalidResponse("\(endpoint): unknown token_type") }
        func seconds(_ text: String?) -> TimeInterval? {
            guard let text, let v = Double(text), v > 0 else { return nil }
            return v
        }
        var grant = TokenGrant(accessToken: access, tokenType: type, expiresIn: seconds(text(\.expiresIn)),
                               refreshToken: text(\.refreshToken).flatMap { $0.isEmpty ? nil : $0 },
                               scope: scopes(read(\.scope), reading.scopeSeparator),
                               idToken: reading.idToken ? text(\.idToken) : nil)
        grant.grantExpiresIn = seconds(shape.grantExpiresIn?.text(in: doc))
        grant.metadata = try kept(shape, doc, endpoint)
        if let p = reading.subject {
            guard let subject = p.text(in: doc), !subject.isEmpty, subject.utf8.count <= 255 else {
                throw .invalidResponse("\(endpoint): no user id at \(p)")
            }
            grant.subject = subject
        }
        return grant
    }

    /// The granted scopes: a string split by the separator, or an array of strings (HubSpot).
    static func scopes(_ value: Any?, _ separator: String) -> [String]? {
        if let s = value as? String { return Scopes.parse(s, separator: separator) }
        if let a = value as? [Any] { return Scopes.parse(a.compactMap { $0 as? String }.joined(separator: " ")) }
        return nil
    }

    /// The answer as an object: JSON, or a form (`application/x-www-form-urlencoded`), as the
    /// descriptor says or, with `auto`, as the Content-Type says (JSON when it says nothing).
    static func document(_ reply: BlockingHTTP.Reply, _ format: TokenResponseShape.Format) -> [String: Any]? {
        let form: Bool
        switch format {
        case .json: form = false
        case .form: form = true
        case .auto: form = reply.contentType?.lowercased().contains("application/x-www-form-urlencoded") == true
        }
        if form {
            guard let pairs = FormEncoding.pairs(Array(reply.body)), !pairs.isEmpty else { return nil }
            return Dictionary(pairs, uniquingKeysWith: { a, _ in a })
        }
        return (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
    }

    /// The members the descriptor keeps, as one compact JSON object (nil: none kept or found).
    private static func kept(_ shape: TokenResponseShape, _ doc: [String: Any], _ endpoint: String) throws(TokenEndpointError) -> String? {
        guard !shape.keep.isEmpty else { return nil }
        var out: [String: Any] = [:]
        for k in shape.keep {
            guard let v = k.pointer.value(in: doc) else { continue }
            guard JSONSerialization.isValidJSONObject([v]),
                  let d = try? JSONSerialization.data(withJSONObject: [v]), d.count <= TokenResponseShape.maxKeptBytes else {
                throw .invalidResponse("\(endpoint): the member kept as '\(k.name)' is over \(TokenResponseShape.maxKeptBytes) bytes")
            }
            out[k.name] = v
        }
        return out.isEmpty ? nil : ProviderDescriptor.canonical(out)
    }
}
