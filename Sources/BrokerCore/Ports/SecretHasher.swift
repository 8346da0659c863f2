/// SecretHasher hashes API-key secrets for storage and compares hashes in constant time.
/// A fast hash is right here: the secrets are 256 random bits, not passwords.
public protocol SecretHasher: Sendable {
    /// Throws CryptoFailure when the library fails.
    func hash(_ secret: String) throws -> [UInt8]
    /// Constant-time equality of two byte strings of the same length.
    func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool
}
