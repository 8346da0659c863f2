import Foundation

/// BrokerKey is one of the broker's own signing keys (actor tokens, RFC 8693 §4.1): named by
/// its RFC 7638 thumbprint, the private half in the clear only in memory.
public struct BrokerKey: Sendable, Equatable {
    public let kid: String
    public let algorithm: JWSAlgorithm
    public let der: [UInt8]
    public let createdAt: Date

    public init(kid: String, algorithm: JWSAlgorithm, der: [UInt8], createdAt: Date) {
        self.kid = kid
        self.algorithm = algorithm
        self.der = der
        self.createdAt = createdAt
    }
}
