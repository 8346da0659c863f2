import Foundation

/// KeySetSource gives an issuer's signing keys (its JWKS, found through discovery), cached.
public protocol KeySetSource: Sendable {
    /// The issuer's usable keys. With a `refetch` budget the source fetches them again — unless
    /// that budget was spent too recently for the issuer (so that a flood of tokens naming
    /// unknown `kid`s cannot make the broker hammer the IdP), in which case it answers what it has.
    func keys(issuer: String, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey]
}

/// RefetchBudget is whose re-fetch a token with an unknown `kid` may spend. Tokens anyone can
/// send (back-channel logout tokens, callbacks) must never use up the budget of the refresh
/// path, whose ID tokens arrive on the authenticated token-endpoint channel: a forged logout
/// token must not be able to make a key rotation end sessions.
public enum RefetchBudget: Sendable, Hashable {
    /// ID tokens of refresh responses: a re-fetch on every miss, at most one a second per issuer.
    case tokenEndpoint
    /// Logout tokens and callbacks: at most one re-fetch per interval (30 s) per issuer.
    case untrusted

    public var minimumInterval: TimeInterval {
        switch self {
        case .tokenEndpoint: 1
        case .untrusted: 30
        }
    }
}
