import Foundation

/// IssuerMetadata is the part of an OpenID Provider's discovery document the broker uses
/// (OpenID Connect Discovery 1.0 §3, RFC 8414 §2, RFC 9207 §3).
public struct IssuerMetadata: Sendable, Equatable {
    public let issuer: String
    public let tokenEndpoint: URL
    public let authorizationEndpoint: URL?
    public let jwksURI: URL?
    public let revocationEndpoint: URL?
    public let endSessionEndpoint: URL?
    /// RFC 7662 token introspection, when offered: how a lost refresh is resolved.
    public let introspectionEndpoint: URL?
    /// The IdP sends `iss` in every authorization response (RFC 9207): a callback without it is refused.
    public let issParameterSupported: Bool
    /// RFC 9126 pushed authorization requests: where logins push their request, when offered.
    public let pushedAuthorizationRequestEndpoint: URL?
    /// RFC 9126 §5: the IdP accepts no authorization request that was not pushed.
    public let requirePushedAuthorizationRequests: Bool
    /// What the IdP says it does (nil: not advertised): ID-token signature algorithms,
    /// token-endpoint client authentication methods and their assertion algorithms.
    public var idTokenSigningAlgorithms: [String]? = nil
    public var tokenEndpointAuthMethods: [String]? = nil
    public var tokenEndpointAuthSigningAlgorithms: [String]? = nil
    /// RFC 9449 §5.1: the algorithms the IdP accepts in DPoP proofs.
    public var dpopSigningAlgorithms: [String]? = nil

    public init(issuer: String, tokenEndpoint: URL, authorizationEndpoint: URL?, jwksURI: URL?, revocationEndpoint: URL?,
                endSessionEndpoint: URL?, issParameterSupported: Bool, introspectionEndpoint: URL? = nil,
                pushedAuthorizationRequestEndpoint: URL? = nil, requirePushedAuthorizationRequests: Bool = false) {
        self.pushedAuthorizationRequestEndpoint = pushedAuthorizationRequestEndpoint
        self.requirePushedAuthorizationRequests = requirePushedAuthorizationRequests
        self.issuer = issuer
        self.tokenEndpoint = tokenEndpoint
        self.authorizationEndpoint = authorizationEndpoint
        self.jwksURI = jwksURI
        self.revocationEndpoint = revocationEndpoint
        self.endSessionEndpoint = endSessionEndpoint
        self.issParameterSupported = issParameterSupported
        self.introspectionEndpoint = introspectionEndpoint
    }
}
