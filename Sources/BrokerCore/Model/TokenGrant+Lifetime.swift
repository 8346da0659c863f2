import Foundation

extension TokenGrant {
    /// When the granted access token expires, counted from when its request was sent: its
    /// `expires_in`; without one, `Session.neverExpires` for a provider whose tokens do not
    /// expire, else the descriptor's assumed lifetime — never later than a JWT's own `exp`.
    public func expiresAt(sentAt: Date, _ lifetime: GrantLifetime) -> Date {
        if expiresIn == nil, !lifetime.accessTokenExpires { return Session.neverExpires }
        return AccessTokenExpiry.clamp(sentAt.addingTimeInterval(expiresIn ?? lifetime.defaultExpiresIn), token: accessToken)
    }

    /// The grant's end: the policy's, shortened by the provider's own refresh-token lifetime.
    public func grantExpiry(policy: Date?, sentAt: Date) -> Date? {
        guard let own = grantExpiresIn.map({ sentAt.addingTimeInterval($0) }) else { return policy }
        return policy.map { min($0, own) } ?? own
    }
}
