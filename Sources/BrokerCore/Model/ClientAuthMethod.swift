/// ClientAuthMethod is how the broker authenticates to an IdP's token endpoint (RFC 6749 §2.3,
/// OIDC Core §9).
public enum ClientAuthMethod: String, Sendable, Codable, CaseIterable {
    /// A public client: PKCE only, no secret. XID issues it no refresh token.
    case none
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
    case privateKeyJWT = "private_key_jwt"

    /// Whether this method needs a stored client secret.
    public var needsSecret: Bool { self == .clientSecretBasic || self == .clientSecretPost }
}
