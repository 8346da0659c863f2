import Foundation

/// ClientRegistration is one tenant's registration at one IdP. The client secret is
/// not part of it: it is sealed at rest and read only when talking to the IdP.
public struct ClientRegistration: Sendable, Equatable {
    public let tenant: String
    /// The broker-side name of this registration, unique in the tenant.
    public let id: String
    public var issuer: String
    /// The client_id registered at the IdP.
    public var clientID: String
    public var authMethod: ClientAuthMethod
    public var redirectURI: String
    public var scopes: [String]
    public var redirectAfterAllowed: [String]
    public var refreshPolicy: RefreshPolicy
    /// Cap on refreshes running at once against this client's IdP.
    public var maxConcurrentRefreshes: Int
    /// With `private_key_jwt`: the algorithm of the broker's key for this client (its private
    /// part sealed in the store, its public JWK shown to the operator to register at the IdP).
    public var assertionAlgorithm: JWSAlgorithm?
    /// What a refresh whose outcome was lost becomes when the issuer offers no introspection.
    public var onAmbiguousRefresh: AmbiguousRefreshPolicy
    /// With DPoP (RFC 9449): the algorithm of the key each session gets; nil for bearer tokens.
    public var dpopAlgorithm: JWSAlgorithm?
    /// The security profile the client is held to (FAPI2Profile for `fapi2`).
    public var profile: ClientProfile
    /// The CA certificates (PEM) this client's provider connections trust instead of the
    /// deployment's; nil: the deployment's trust. Never widens another client's trust.
    public var trustAnchors: String?
    /// The catalogue entry the registration was made from (`github`), if any.
    public var provider: String?
    /// What the provider does differently from the standards; `.openID` for an OpenID provider
    /// found by discovery.
    public var descriptor: ProviderDescriptor
    /// A disabled client keeps its registration and gets no app token (none is granted, none
    /// stored is handed out).
    public var disabled: Bool
    /// Where the outbound proxy sends this client's calls, and how (nil: set nowhere here; the
    /// descriptor's may still apply: `effectiveUpstream`).
    public var upstream: UpstreamSettings?
    /// With `tls_client_auth` or `self_signed_tls_client_auth`: what may be shown of the
    /// certificate presented to the provider (RFC 8705 §2); the chain and key are sealed apart.
    public var tlsClientCertificate: ClientCertificate?
    /// Access tokens bound to the client's certificate (RFC 8705 §3) may be handed to workers:
    /// they hold the same certificate and key. Off: such a hand-out is refused (409
    /// `token_certificate_bound`), and the token is used through the outbound proxy only.
    public var handOutCertificateBound = false

    public init(tenant: String, id: String, issuer: String, clientID: String, authMethod: ClientAuthMethod,
                redirectURI: String, scopes: [String], redirectAfterAllowed: [String] = [],
                refreshPolicy: RefreshPolicy = RefreshPolicy(), maxConcurrentRefreshes: Int = 8,
                assertionAlgorithm: JWSAlgorithm? = nil, onAmbiguousRefresh: AmbiguousRefreshPolicy = .failClosed,
                dpopAlgorithm: JWSAlgorithm? = nil, profile: ClientProfile = .standard,
                trustAnchors: String? = nil, provider: String? = nil, descriptor: ProviderDescriptor = .openID, disabled: Bool = false,
                upstream: UpstreamSettings? = nil) {
        self.tenant = tenant
        self.id = id
        self.issuer = issuer
        self.clientID = clientID
        self.authMethod = authMethod
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.redirectAfterAllowed = redirectAfterAllowed
        self.refreshPolicy = refreshPolicy
        self.maxConcurrentRefreshes = maxConcurrentRefreshes
        self.assertionAlgorithm = assertionAlgorithm
        self.onAmbiguousRefresh = onAmbiguousRefresh
        self.dpopAlgorithm = dpopAlgorithm
        self.profile = profile
        self.trustAnchors = trustAnchors
        self.provider = provider
        self.descriptor = descriptor
        self.disabled = disabled
        self.upstream = upstream
    }

    /// The upstream in force: the registration's, its unset members from the descriptor's.
    public var effectiveUpstream: UpstreamSettings? { UpstreamSettings.effective(client: upstream, descriptor: descriptor.upstream) }

    /// The ID-token algorithms the profile allows (nil: every one the broker verifies).
    public var idTokenAlgorithms: Set<JWSAlgorithm>? { profile == .fapi2 ? FAPI2Profile.algorithms : nil }

    /// The `aud` of this client's assertions at `endpoint`: the issuer identifier, a single
    /// string, under FAPI 2.0 (§5.3.2.1); the endpoint otherwise (RFC 7523 §3 allows both).
    public func assertionAudience(endpoint: String) -> String { profile == .fapi2 ? issuer : endpoint }

    /// Where the client's provider metadata is read: discovery for an OpenID provider; RFC 8414
    /// for an OAuth 2.0 provider, unless its descriptor gives the token endpoint, and then every
    /// endpoint comes from the descriptor and no metadata is read (nil).
    public var metadataSource: MetadataSource? {
        let d = descriptor
        if d.kind == .oauth2, d.endpoints.token != nil { return nil }
        return MetadataSource(issuer: d.issuer ?? issuer, document: d.kind == .oidc ? .openID : .authorizationServer, namedIssuer: d.issuerTemplate)
    }

    /// `scheme://host[:port]` of a URL: the issuer a provider without metadata is known by.
    public static func origin(of url: URL) -> String {
        (url.scheme ?? "https") + "://" + (url.host ?? "") + (url.port.map { ":\($0)" } ?? "")
    }
}
