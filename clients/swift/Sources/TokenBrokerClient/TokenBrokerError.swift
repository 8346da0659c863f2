/// What a worker does next depends only on the case.
public enum TokenBrokerError: Error, Sendable, Equatable {
    /// 409 needs_reauth: the IdP refused the grant. Ask the user to sign in again.
    case needsReauth(Details)
    /// 409 revoked: an admin, a sign-out or the IdP ended the session. Do not retry.
    case revoked(Details)
    /// 503 (idp_unavailable, refresh_busy, store_unavailable, or the broker unreachable): try
    /// again after `retryAfter` seconds (nil when none was named); the client's own wait is spent.
    case unavailable(Details, retryAfter: Double?)
    /// 404: no such session, no active session of the subject, or a tenant the key cannot reach.
    case notFound(Details)
    /// 401: the API key is missing, unknown, expired or revoked.
    case unauthorized(Details)
    /// 403: the key lacks the worker role, or the session a scope asked for (insufficient_scope).
    case forbidden(Details)
    /// 400, 413, 422 (e.g. min_ttl_too_long): the request itself must change.
    case badRequest(Details)
    /// Any other answer (502 idp_client_rejected: an operator must fix the registration).
    case other(Details)

    public struct Details: Sendable, Equatable {
        public let status: Int
        public let code: String
        public let message: String
        public let requestID: String?
    }

    public var details: Details {
        switch self {
        case .needsReauth(let d), .revoked(let d), .unavailable(let d, _), .notFound(let d), .unauthorized(let d),
             .forbidden(let d), .badRequest(let d), .other(let d): d
        }
    }

    /// The typed error of one answer (or one batch item).
    static func of(status: Int, body: [String: Any], retryAfter: Double?) -> TokenBrokerError {
        let d = Details(status: status, code: body["error"] as? String ?? "http_\(status)",
                        message: body["message"] as? String ?? "", requestID: body["request_id"] as? String)
        switch status {
        case 409: return d.code == "revoked" ? .revoked(d) : .needsReauth(d)
        case 503: return .unavailable(d, retryAfter: retryAfter)
        case 404: return .notFound(d)
        case 401: return .unauthorized(d)
        case 403: return .forbidden(d)
        case 400, 413, 422: return .badRequest(d)
        default: return .other(d)
        }
    }
}
