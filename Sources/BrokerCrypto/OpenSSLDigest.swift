import BrokerCore

/// OpenSSLDigest is SHA-256 for PKCE and hashed lookups.
public struct OpenSSLDigest: Digest {
    public init() {}

    public func sha256(_ bytes: [UInt8]) throws -> [UInt8] {
        try bytes.withUnsafeBytes { b throws(CryptoFailure) in try OpenSSL.sha256(b) }
    }
}
