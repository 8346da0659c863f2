/// Digest computes SHA-256, for PKCE S256 (RFC 7636 §4.2) and for looking up values by hash.
public protocol Digest: Sendable {
    /// Throws CryptoFailure when the library fails.
    func sha256(_ bytes: [UInt8]) throws -> [UInt8]
}
