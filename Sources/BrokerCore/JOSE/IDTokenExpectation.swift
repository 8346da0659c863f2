import Foundation

/// IDTokenExpectation is what an ID token must say to be accepted (OIDC Core §3.1.3.7; for a
/// refreshed one §12.2).
public struct IDTokenExpectation: Sendable {
    /// `iss` must equal this exactly — unless `issuerTemplate` is given.
    public let issuer: String
    /// An issuer with `{tenantid}` (Microsoft's multi-tenant endpoints): `iss` must equal it with
    /// the token's own `tid` put in, and the keys are still `issuer`'s (the common document's).
    public var issuerTemplate: String? = nil
    /// `aud` must contain this; with several audiences `azp` must equal it.
    public let clientID: String
    /// `nonce` must equal this; nil for a refreshed ID token (XID sends none then).
    public let nonce: String?
    /// `sub` must equal this (refresh: the session's subject); nil at login.
    public let subject: String?
    /// How far `iat` may lie in the future, and `exp` in the past, for clock differences.
    public let skew: TimeInterval
    /// The signature algorithms allowed (a client profile's); nil: every one the broker verifies.
    public let algorithms: Set<JWSAlgorithm>?

    public init(issuer: String, clientID: String, nonce: String?, subject: String? = nil, skew: TimeInterval = 60,
                algorithms: Set<JWSAlgorithm>? = nil) {
        self.algorithms = algorithms
        self.issuer = issuer
        self.clientID = clientID
        self.nonce = nonce
        self.subject = subject
        self.skew = skew
    }
}
