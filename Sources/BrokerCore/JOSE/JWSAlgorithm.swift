/// JWSAlgorithm is every signature algorithm the broker accepts (RFC 7518 §3.1). Only
/// asymmetric ones: `none` and the HS* family are not representable, so a token naming them
/// is refused before any key is looked at (RFC 8725 §3.1, §3.2).
public enum JWSAlgorithm: String, Sendable, CaseIterable {
    /// ECDSA P-256 with SHA-256 (RFC 7518 §3.4): XID's default.
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
    case rs256 = "RS256"
    /// RSASSA-PSS with SHA-256, MGF1 SHA-256, 32-byte salt (RFC 7518 §3.5).
    case ps256 = "PS256"

    /// The JWK key type this algorithm needs (RFC 7518 §6.1).
    public var keyType: String { self == .es256 ? "EC" : "RSA" }
}
