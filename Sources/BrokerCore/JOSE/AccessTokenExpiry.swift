import Foundation

/// AccessTokenExpiry reads the `exp` of an access token that happens to be a JWT (RFC 9068, as
/// XID issues them), unverified: it is only ever used to shorten the expiry computed from
/// `expires_in`, never to extend it. IdPs count `exp` in whole seconds from their own clock, so
/// `sent + expires_in` can be up to a second later than the token really lives.
public enum AccessTokenExpiry {
    /// The earlier of `computed` and the token's own `exp`, when it has one.
    public static func clamp(_ computed: Date, token: String) -> Date {
        guard let exp = (CompactJWS.unverifiedClaims(token)?["exp"] as? NSNumber)?.doubleValue else { return computed }
        return min(computed, Date(timeIntervalSince1970: exp))
    }
}
