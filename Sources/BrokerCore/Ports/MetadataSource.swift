/// MetadataSource names a provider's metadata document: OpenID Connect Discovery 1.0
/// (`/.well-known/openid-configuration` appended to the issuer) or OAuth 2.0 Authorization
/// Server Metadata (RFC 8414: `/.well-known/oauth-authorization-server` inserted before the
/// issuer's path, §3.1), and the `issuer` the document must name: the issuer itself, character
/// for character, or a descriptor's issuer template (Microsoft's multi-tenant documents name
/// `…/{tenantid}/v2.0`).
public struct MetadataSource: Hashable, Sendable {
    public enum Document: String, Hashable, Sendable {
        case openID = "openid-configuration"
        case authorizationServer = "oauth-authorization-server"
    }

    public let issuer: String
    public let document: Document
    public let namedIssuer: String

    public init(issuer: String, document: Document, namedIssuer: String? = nil) {
        self.issuer = issuer
        self.document = document
        self.namedIssuer = namedIssuer ?? issuer
    }

    public static func openID(_ issuer: String) -> MetadataSource { MetadataSource(issuer: issuer, document: .openID) }

    /// Where the document is read: Discovery §4 appends the well-known path to the issuer;
    /// RFC 8414 §3.1 inserts it between the host and the issuer's path. Nil when the issuer is
    /// not a URL with a host.
    public var url: String? {
        guard let schemeEnd = issuer.range(of: "://") else { return nil }
        let rest = issuer[schemeEnd.upperBound...]
        let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
        guard pathStart > rest.startIndex else { return nil }
        let origin = issuer[..<pathStart], path = issuer[pathStart...]
        let trimmed = path.hasSuffix("/") ? path.dropLast() : path
        switch document {
        case .openID: return String(origin) + trimmed + "/.well-known/openid-configuration"
        case .authorizationServer: return String(origin) + "/.well-known/oauth-authorization-server" + trimmed
        }
    }
}
