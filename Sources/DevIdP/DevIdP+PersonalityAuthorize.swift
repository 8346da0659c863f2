import BrokerCore
import BrokerHTTP
import Foundation

/// A personality's authorization endpoint: approves at once for the user named by
/// `login_hint`, and redirects with `code` and `state` (and `iss` only if the provider sends
/// it, and the provider's extra parameters). PKCE S256 is checked when the request has it,
/// required or ignored as the personality says; a refresh token is promised the provider's way.
extension DevIdP {
    func personalityAuthorize(_ p: Personality, _ req: HTTPRequest) -> HTTPResponse {
        let q = Dictionary(req.query.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        guard let clientID = q["client_id"], let redirect = q["redirect_uri"],
              state.withLock({ $0.clients[clientID]?.redirectURIs.contains(redirect) == true }) else {
            return json(400, ["error": "invalid_request", "error_description": "unknown client or redirect_uri"])
        }
        let issuer = p.issuer(root: issuer(for: req), tenant: req.parameters["tenant"])
        func back(_ params: [(String, String)]) -> HTTPResponse {
            var all = params + [("state", q["state"] ?? "")]
            if p.sendsIss { all.append(("iss", issuer)) }
            return .redirect(redirect + (redirect.contains("?") ? "&" : "?") + FormEncoding.body(all))
        }
        if case .single(let tenant) = p.tenancy, req.parameters["tenant"] != tenant {
            return back([("error", "invalid_request"), ("error_description", "unknown tenant")])
        }
        guard q["response_type"] == "code" else { return back([("error", "unsupported_response_type")]) }
        var challenge: String?
        if p.pkce != .ignored, let c = q["code_challenge"] {
            guard q["code_challenge_method"] == "S256", c.count == 43 else { return back([("error", "invalid_request")]) }
            challenge = c
        } else if p.pkce == .required {
            return back([("error", "invalid_request"), ("error_description", "code_challenge required")])
        }
        guard let subject = q["login_hint"], !subject.isEmpty else { return back([("error", "login_required")]) }
        let scope = q["scope"] ?? "", userScope = q["user_scope"]
        let offline: Bool
        switch p.offline {
        case .always: offline = true
        case .never: offline = false
        case .param(let name, let value): offline = q[name] == value
        case .scope(let s): offline = Personality.scopes(scope).contains(s)
        }
        var rng = SystemRandomNumberGenerator()
        let code = Identifiers.token(bytes: 32, using: &rng)
        let grant = PersonalityCode(personality: p.name, client: clientID, redirectURI: redirect, challenge: challenge, nonce: q["nonce"],
                                    scope: scope, userScope: userScope, subject: subject, offline: offline, expires: Date().addingTimeInterval(60))
        state.withLock { $0.personalityCodes[code] = grant }
        return back([("code", code)] + p.redirectExtras.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}

extension Personality {
    /// The scopes of a request, separated by spaces or commas.
    static func scopes(_ s: String) -> [String] {
        s.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
    }
}
