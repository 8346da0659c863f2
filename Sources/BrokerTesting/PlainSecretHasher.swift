import BrokerCore

/// PlainSecretHasher hashes by reversing bytes: enough for unit tests of the authenticator's
/// logic; the real hasher (SHA-256, constant-time compare) has its own adapter tests.
public struct PlainSecretHasher: SecretHasher {
    public init() {}
    public func hash(_ secret: String) -> [UInt8] { Array(secret.utf8.reversed()) }
    public func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool { !a.isEmpty && a == b }
}
