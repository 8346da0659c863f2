import Foundation

/// KeySetSource gives an issuer's signing keys (its JWKS, found through discovery), cached.
public protocol KeySetSource: Sendable {
    /// The issuer's usable keys. With `refetch` the source fetches them again — unless it did
    /// so too recently (a rate limit, so that a flood of tokens naming unknown `kid`s cannot
    /// make the broker hammer the IdP), in which case it answers what it has.
    func keys(issuer: String, now: Date, refetch: Bool) throws(TokenEndpointError) -> [JSONWebKey]
}
