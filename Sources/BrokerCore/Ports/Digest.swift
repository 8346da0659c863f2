/// Digest computes SHA-256, for PKCE S256 (RFC 7636 §4.2) and for looking up values by hash.
public protocol Digest: Sendable {
    func sha256(_ bytes: [UInt8]) -> [UInt8]
}
