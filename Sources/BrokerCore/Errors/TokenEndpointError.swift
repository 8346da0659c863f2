import Foundation

/// TokenEndpointError is why a call to an IdP's token endpoint failed. What matters for a
/// refresh is whether the IdP may have acted on the request: `notSent` and `transient` say it
/// did not, `unanswered` says it may have, the others say it answered and refused.
public enum TokenEndpointError: Error, Sendable, Equatable {
    /// The IdP answered with an RFC 6749 §5.2 error, kept as it came.
    case oauth(OAuthError)
    /// The IdP answered 5xx (not 504) or 429: it did not act; retry later (after `retryAfter` if given).
    case transient(reason: String, retryAfter: Int?)
    /// The request provably never left this process (DNS, connection refused, connect timeout,
    /// TLS handshake): the IdP cannot have acted.
    case notSent(String)
    /// The provider's TLS certificate was refused (OpenSSL's reason): the request never left.
    case certificateRefused(String)
    /// The request may have reached the IdP and no usable answer came back (timeout after
    /// sending, connection closed, 504 from a gateway): the IdP may have acted.
    case unanswered(String)
    /// A 4xx answer without an RFC 6749 error body (e.g. 400 with an empty body): a refusal,
    /// not an outage.
    case refused(status: Int, reason: String)
    /// The response was not a usable token response (§7): not JSON, no access_token, unknown type, too large.
    case invalidResponse(String)
    /// The IdP's metadata could not be obtained or does not match the configured issuer.
    case metadata(String)

    /// A generic description for logs and `last_error`: never a token, never an IdP body.
    public var reason: String {
        switch self {
        case .oauth(let o): "\(o.code) (HTTP \(o.status))" + (o.context.map { " " + $0.summary } ?? "")
        case .certificateRefused(let r): "TLS certificate refused: \(r)"
        case .transient(let r, _), .notSent(let r), .unanswered(let r), .invalidResponse(let r), .metadata(let r): r
        case .refused(let status, let r): "HTTP \(status): \(r)"
        }
    }
}

/// OAuthError is an RFC 6749 §5.2 error response: `error` and `error_description` as sent.
public struct OAuthError: Error, Sendable, Equatable {
    public let error: String
    public let description: String?
    public let status: Int
    /// Which endpoint refused and what the request carried (proof, nonce), when the caller knows.
    public var context: RefusalContext?

    public init(error: String, description: String?, status: Int, context: RefusalContext? = nil) {
        self.error = error
        self.description = description
        self.status = status
        self.context = context
    }

    /// The refusal as the server said it, for the caller who made the request: its code, its
    /// `error_description` when that is short plain text (quoted; anything else is left out, since
    /// an IdP could put anything there), the HTTP status and `context`. Never for logs.
    public var told: String {
        var s = code
        if let d = description, (1...300).contains(d.utf8.count), d.utf8.allSatisfy({ $0 >= 32 && $0 < 127 }) { s += ": \"\(d)\"" }
        s += " (HTTP \(status))"
        if let context { s += " " + context.summary }
        return s
    }

    /// `error` when it is a plain RFC 6749 code (a short token of `a-z`, `0-9`, `_`), else
    /// `unrecognized_error`: the only form of the IdP's words that may reach a log line, a
    /// stored reason or a response — an IdP could put anything, a token even, in that member.
    public var code: String { Self.isCode(error) ? error : "unrecognized_error" }

    public static func isCode(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || $0 == 95 || ($0 >= 48 && $0 <= 57) }
    }
}

extension TokenEndpointError {
    /// What an IdP failure outside the refresh machine (a login, a logout URL) is for the
    /// caller: an outage is 503, unusable metadata or answers 422 `idp_misconfigured`.
    public var callerError: BrokerError {
        switch self {
        case .transient(_, let after): .idpUnavailable(retryAfter: after)
        case .certificateRefused(let why): .idpCertificateRefused(reason: why)
        case .metadata(let why), .invalidResponse(let why): .unprocessable(code: "idp_misconfigured", message: why)
        case .oauth, .notSent, .unanswered, .refused: .idpUnavailable(retryAfter: nil)
        }
    }
}
