import BrokerCore
import Foundation

/// TokenResponse checks a token-endpoint answer (RFC 6749 §5.1, §5.2) before anything is stored:
/// JSON object, `access_token` present, `token_type` Bearer or DPoP (case-insensitive, RFC 6749
/// §7.1 / RFC 9449 §5). Classified by status first: 504 (a gateway gave up; the IdP may have
/// acted) is `unanswered`; other 5xx and 429 are transient, with Retry-After honoured when in
/// seconds, whatever the body (often HTML); a 4xx is an RFC 6749 §5.2 error when its body says
/// so, else a bare refusal — never an outage.
enum TokenResponse {
    /// `endpoint` names the endpoint in failure reasons (the revocation and PAR endpoints answer
    /// errors in the same RFC 6749 §5.2 shape).
    static func parse(_ reply: BlockingHTTP.Reply, endpoint: String = "token endpoint") throws(TokenEndpointError) -> TokenGrant {
        if reply.status == 504 { throw .unanswered("\(endpoint): HTTP 504 from a gateway") }
        if reply.status >= 500 || reply.status == 429 {
            throw .transient(reason: "\(endpoint): HTTP \(reply.status)", retryAfter: reply.retryAfter)
        }
        let json = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
        if (400..<500).contains(reply.status) {
            guard let error = json?["error"] as? String else {
                throw .refused(status: reply.status, reason: "\(endpoint): HTTP \(reply.status) without an RFC 6749 error")
            }
            throw .oauth(OAuthError(error: error, description: json?["error_description"] as? String, status: reply.status))
        }
        guard reply.status == 200 else { throw .invalidResponse("token endpoint: unexpected HTTP \(reply.status)") }
        guard let json else { throw .invalidResponse("token endpoint: response is not a JSON object (HTTP 200)") }
        guard let access = json["access_token"] as? String, !access.isEmpty else {
            throw .invalidResponse("token endpoint: no access_token")
        }
        guard let type = (json["token_type"] as? String).flatMap(TokenType.init(named:)) else {
            throw .invalidResponse("token endpoint: unknown token_type")
        }
        let expiresIn = (json["expires_in"] as? NSNumber)?.doubleValue ?? (json["expires_in"] as? String).flatMap(Double.init)
        return TokenGrant(accessToken: access, tokenType: type, expiresIn: expiresIn.flatMap { $0 > 0 ? $0 : nil },
                          refreshToken: (json["refresh_token"] as? String).flatMap { $0.isEmpty ? nil : $0 },
                          scope: (json["scope"] as? String).map { Scopes.parse($0) }, idToken: json["id_token"] as? String)
    }
}
