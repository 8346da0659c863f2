import Foundation

/// KeySetSource gives an issuer's signing keys (its JWKS, found through its discovery document,
/// `source`), cached per document and trust: `trustAnchors` is the client's own CA certificates
/// (PEM), nil for the deployment's, and keys fetched under one trust are never answered to a
/// caller of another.
public protocol KeySetSource: Sendable {
    /// The issuer's usable keys. With a `refetch` budget the source fetches them again — unless
    /// that budget was spent too recently for the issuer (so that a flood of tokens naming
    /// unknown `kid`s cannot make the broker hammer the IdP), in which case it answers what it has.
    func keys(_ source: MetadataSource, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey]
}

extension KeySetSource {
    /// An OpenID provider's keys, found through its discovery document.
    public func keys(issuer: String, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] {
        try keys(.openID(issuer), trustAnchors: trustAnchors, now: now, refetch: refetch)
    }
}

/// RefetchBudget is whose re-fetch a token with an unknown `kid` may spend, per issuer. Tokens
/// anyone can send (back-channel logout tokens) or cause (callbacks) never use up the budget of
/// the refresh path, whose ID tokens arrive on the authenticated token-endpoint channel, nor each
/// other's: a forged logout token must not be able to make a key rotation end sessions or fail
/// logins.
public enum RefetchBudget: Sendable, Hashable {
    /// ID tokens of refresh responses: a re-fetch on every miss, at most one a second.
    case refresh
    /// ID tokens of code exchanges at the callback: at most one re-fetch per 10 s.
    case callback
    /// Back-channel logout tokens: at most one re-fetch per 30 s.
    case logoutToken

    public var minimumInterval: TimeInterval {
        switch self {
        case .refresh: 1
        case .callback: 10
        case .logoutToken: 30
        }
    }
}
