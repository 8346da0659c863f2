import Foundation

/// ProviderDescriptor is everything a provider does differently from the standards, as data:
/// where its endpoints are, the parameters it wants, how its answers are shaped, whether its
/// refresh tokens rotate, expire or exist, how a token is revoked (docs/provider-descriptors.md).
/// The broker has no code for one provider; `ProviderDescriptor.openID` is an OpenID provider
/// found by discovery, every member at the standards' default.
///
/// Parsed and checked from JSON once, when a registration is stored or read
/// (`ProviderDescriptor(json:)`); kept with the registration as its `json`, so that a registration
/// reads back exactly what was checked.
public struct ProviderDescriptor: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable { case oidc, oauth2 }

    public var kind: Kind = .oidc
    public var title: String?
    public var documentation: [String] = []
    /// With `oauth2`: where RFC 8414 metadata is read; nil: the registration's issuer, if any.
    public var issuer: String?
    /// An issuer with `{tenantid}` (Microsoft's multi-tenant endpoints): an ID token's `iss` must
    /// equal it with the token's own `tid` put in.
    public var issuerTemplate: String?
    public var endpoints = ProviderEndpoints()
    public var authorization = AuthorizationStyle()
    public var tokenRequest = TokenRequestStyle()
    public var tokenResponse = TokenResponseShape()
    public var grant = GrantLifetime()
    /// Nil: the protocol's default (`id_token` for OIDC, `userinfo` for OAuth 2.0).
    public var subject: SubjectSource?
    public var refusals = RefusalCodes()
    public var revocation = RevocationStyle()
    /// Extra HTTP headers sent with every request to the provider's endpoints (token,
    /// revocation, who-am-I): Notion's `Notion-Version`.
    public var headers: [Parameter] = []
    /// The provider's API, for the outbound proxy: its base URL and how it answers a dead token.
    public var upstream: UpstreamSettings?
    /// The descriptor as checked, compact JSON with sorted keys ("{}" for `openID`).
    public var json: String = "{}"

    public init() {}

    /// An OpenID provider found by discovery: today's behaviour, every member at its default.
    public static let openID = ProviderDescriptor()

    /// Where the user's id comes from, the protocol's default when the descriptor names none.
    public var subjectSource: SubjectSource { subject ?? (kind == .oidc ? SubjectSource(from: .idToken) : SubjectSource(from: .userinfo)) }

    /// `{tenantid}`, the placeholder of `issuerTemplate`.
    public static let tenantPlaceholder = "{tenantid}"

    /// Every URL the descriptor names, with the member it is in: each must pass the broker's
    /// rules for configured URLs (https; http only to loopback hosts).
    public var urls: [(String, String)] {
        let e = endpoints
        let named: [(String, URL?)] = [("endpoints.authorization", e.authorization), ("endpoints.token", e.token),
                                       ("endpoints.revocation", e.revocation), ("endpoints.introspection", e.introspection),
                                       ("endpoints.userinfo", e.userinfo)]
        var out = named.compactMap { m, u in u.map { (m, $0.absoluteString) } }
        if let u = subject?.url { out.append(("subject.url", u.replacingOccurrences(of: "{token}", with: "token"))) }
        if let u = revocation.url {
            out.append(("revocation.url", u.replacingOccurrences(of: "{client_id}", with: "client").replacingOccurrences(of: "{token}", with: "token")))
        }
        return out
    }

    /// The descriptor's extra headers as `Name: value` lines.
    public var headerLines: [String] { headers.map { "\($0.name): \($0.value)" } }
}
