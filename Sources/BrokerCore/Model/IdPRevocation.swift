/// IdPRevocation is what became of a token sent to the issuer for revocation (RFC 7009).
public enum IdPRevocation: Sendable, Equatable {
    /// The IdP answered 200: revoked, or already invalid (RFC 7009 §2.2).
    case revoked
    /// The issuer offers no revocation: its metadata names no `revocation_endpoint` (RFC 7009
    /// is optional; RFC 8414 §2). Nothing can be done there — waiting would not change it — so
    /// the token is erased here and lives at the IdP until it expires.
    case unsupported
}
