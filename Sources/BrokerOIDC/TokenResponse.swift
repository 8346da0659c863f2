import BrokerCore
import Foundation

/// TokenResponse checks a token-endpoint answer (RFC 6749 §5.1, §5.2) before anything is stored:
/// JSON object, `access_token` present, `token_type` Bearer or DPoP (case-insensitive, RFC 6749
/// §7.1 / RFC 9449 §5). 5xx and 429 are transient, with Retry-After honoured when in seconds.
enum TokenResponse {
    static func parse(_ reply: BlockingHTTP.Reply) throws(TokenEndpointError) -> TokenGrant {
        if reply.status >= 500 || reply.status == 429 {
            throw .transient(reason: "token endpoint: HTTP \(reply.status)", retryAfter: reply.retryAfter)
        }
        guard let json = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any] else {
            throw .invalidResponse("token endpoint: response is not a JSON object (HTTP \(reply.status))")
        }
        guard reply.status == 200 else {
            guard let error = json["error"] as? String else { throw .invalidResponse("token endpoint: HTTP \(reply.status) without error code") }
            throw .oauth(OAuthError(error: error, description: json["error_description"] as? String, status: reply.status))
        }
        guard let access = json["access_token"] as? String, !access.isEmpty else {
            throw .invalidResponse("token endpoint: no access_token")
        }
        let type: String
        switch (json["token_type"] as? String)?.lowercased() {
        case "bearer": type = "Bearer"
        case "dpop": type = "DPoP"
        default: throw .invalidResponse("token endpoint: unknown token_type")
        }
        let expiresIn = (json["expires_in"] as? NSNumber)?.doubleValue ?? (json["expires_in"] as? String).flatMap(Double.init)
        return TokenGrant(accessToken: access, tokenType: type, expiresIn: expiresIn.flatMap { $0 > 0 ? $0 : nil },
                          refreshToken: (json["refresh_token"] as? String).flatMap { $0.isEmpty ? nil : $0 },
                          scope: (json["scope"] as? String).map { Scopes.parse($0) }, idToken: json["id_token"] as? String)
    }
}
