import Foundation

/// TokenEndpointError is why a call to an IdP's token endpoint failed.
public enum TokenEndpointError: Error, Sendable, Equatable {
    /// The IdP answered with an RFC 6749 §5.2 error, kept as it came.
    case oauth(OAuthError)
    /// Network error, timeout, 5xx or 429: worth retrying later (after `retryAfter` if given).
    case transient(reason: String, retryAfter: Int?)
    /// The response was not a usable token response (§7): not JSON, no access_token, unknown type, too large.
    case invalidResponse(String)
    /// The IdP's metadata could not be obtained or does not match the configured issuer.
    case metadata(String)

    /// Whether this failure ends the grant: `invalid_grant`, or `access_denied` with 403 (spec §8).
    public var isTerminal: Bool {
        if case .oauth(let e) = self {
            return e.error == "invalid_grant" || (e.error == "access_denied" && e.status == 403)
        }
        return false
    }
}

/// OAuthError is an RFC 6749 §5.2 error response: `error` and `error_description` as sent.
public struct OAuthError: Error, Sendable, Equatable {
    public let error: String
    public let description: String?
    public let status: Int

    public init(error: String, description: String?, status: Int) {
        self.error = error
        self.description = description
        self.status = status
    }
}
