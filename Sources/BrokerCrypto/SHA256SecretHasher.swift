import BrokerCore
import COpenSSL

/// SHA256SecretHasher stores API-key secrets as SHA-256 and compares with CRYPTO_memcmp, which
/// takes the same time wherever the first difference is.
public struct SHA256SecretHasher: SecretHasher {
    public init() {}

    public func hash(_ secret: String) throws -> [UInt8] { try SHA256.hash(secret) }

    public func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 } }
    }
}
