import Foundation

/// IssuerMetadata is the part of a provider's metadata the broker uses (OpenID Connect Discovery
/// 1.0 §3, RFC 8414 §2, RFC 9207 §3), with the endpoints a provider descriptor gives explicitly
/// put over it (`overridden(by:)`), or made from those endpoints alone (`explicit`).
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
    /// OpenID Connect Core §5.3 (or a descriptor's "who am I" endpoint).
    public var userinfoEndpoint: URL? = nil
    /// RFC 8705 §5 `mtls_endpoint_aliases`: the endpoints (by metadata name) a client doing
    /// mutual TLS uses instead of the top-level ones; nil when not advertised.
    public var mtlsEndpointAliases: [String: URL]? = nil

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

extension IssuerMetadata {
    /// The endpoints a descriptor gives, each one over the document's.
    public func overridden(by e: ProviderEndpoints) -> IssuerMetadata {
        var m = IssuerMetadata(issuer: issuer, tokenEndpoint: e.token ?? tokenEndpoint, authorizationEndpoint: e.authorization ?? authorizationEndpoint,
                               jwksURI: jwksURI, revocationEndpoint: e.revocation ?? revocationEndpoint, endSessionEndpoint: endSessionEndpoint,
                               issParameterSupported: issParameterSupported, introspectionEndpoint: e.introspection ?? introspectionEndpoint,
                               pushedAuthorizationRequestEndpoint: pushedAuthorizationRequestEndpoint,
                               requirePushedAuthorizationRequests: requirePushedAuthorizationRequests)
        m.idTokenSigningAlgorithms = idTokenSigningAlgorithms
        m.tokenEndpointAuthMethods = tokenEndpointAuthMethods
        m.tokenEndpointAuthSigningAlgorithms = tokenEndpointAuthSigningAlgorithms
        m.dpopSigningAlgorithms = dpopSigningAlgorithms
        m.userinfoEndpoint = e.userinfo ?? userinfoEndpoint
        m.mtlsEndpointAliases = mtlsEndpointAliases
        return m
    }

    /// The metadata as a client doing mutual TLS uses it (RFC 8705 §5): each endpoint it calls
    /// directly replaced by its alias in `mtls_endpoint_aliases` when there is one; an endpoint
    /// without an alias stays the top-level one. The authorization and end-session endpoints are
    /// the browser's, never aliased.
    public func mutualTLSAliased() -> IssuerMetadata {
        guard let a = mtlsEndpointAliases, !a.isEmpty else { return self }
        var m = IssuerMetadata(issuer: issuer, tokenEndpoint: a["token_endpoint"] ?? tokenEndpoint, authorizationEndpoint: authorizationEndpoint,
                               jwksURI: jwksURI, revocationEndpoint: a["revocation_endpoint"] ?? revocationEndpoint,
                               endSessionEndpoint: endSessionEndpoint, issParameterSupported: issParameterSupported,
                               introspectionEndpoint: a["introspection_endpoint"] ?? introspectionEndpoint,
                               pushedAuthorizationRequestEndpoint: a["pushed_authorization_request_endpoint"] ?? pushedAuthorizationRequestEndpoint,
                               requirePushedAuthorizationRequests: requirePushedAuthorizationRequests)
        m.idTokenSigningAlgorithms = idTokenSigningAlgorithms
        m.tokenEndpointAuthMethods = tokenEndpointAuthMethods
        m.tokenEndpointAuthSigningAlgorithms = tokenEndpointAuthSigningAlgorithms
        m.dpopSigningAlgorithms = dpopSigningAlgorithms
        m.userinfoEndpoint = a["userinfo_endpoint"] ?? userinfoEndpoint
        m.mtlsEndpointAliases = mtlsEndpointAliases
        return m
    }

    /// The metadata of a provider that publishes none: the descriptor's endpoints only.
    public static func explicit(issuer: String, _ e: ProviderEndpoints) -> IssuerMetadata? {
        guard let token = e.token else { return nil }
        var m = IssuerMetadata(issuer: issuer, tokenEndpoint: token, authorizationEndpoint: e.authorization, jwksURI: nil,
                               revocationEndpoint: e.revocation, endSessionEndpoint: nil, issParameterSupported: false,
                               introspectionEndpoint: e.introspection)
        m.userinfoEndpoint = e.userinfo
        return m
    }
}
