/// ClientAuthMethod is how the broker authenticates to an IdP's token endpoint (RFC 6749 §2.3,
/// OIDC Core §9).
public enum ClientAuthMethod: String, Sendable, Codable, CaseIterable {
    /// A public client: PKCE only, no secret. XID issues it no refresh token.
    case none
    case clientSecretBasic = "client_secret_basic"
    case clientSecretPost = "client_secret_post"
    case privateKeyJWT = "private_key_jwt"
    /// Mutual TLS with a certificate issued by a CA the provider trusts, registered there by its
    /// subject (RFC 8705 §2.1): the request carries `client_id` and no secret or assertion.
    case tlsClientAuth = "tls_client_auth"
    /// Mutual TLS with a self-signed certificate registered at the provider (its JWKS or
    /// thumbprint, RFC 8705 §2.2); requests as with `tls_client_auth`.
    case selfSignedTLSClientAuth = "self_signed_tls_client_auth"

    /// Whether this method needs a stored client secret.
    public var needsSecret: Bool { self == .clientSecretBasic || self == .clientSecretPost }

    /// Whether this method authenticates with a client certificate on the TLS connection
    /// (RFC 8705 §2), and so needs a stored certificate and key.
    public var needsCertificate: Bool { self == .tlsClientAuth || self == .selfSignedTLSClientAuth }
}
