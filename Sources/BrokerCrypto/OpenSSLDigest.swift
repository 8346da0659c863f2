import BrokerCore

/// OpenSSLDigest is SHA-256 for PKCE and hashed lookups.
public struct OpenSSLDigest: Digest {
    public init() {}

    public func sha256(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { OpenSSL.sha256($0) }
    }
}
