import Foundation

/// Sealer encrypts secrets at rest: a fresh nonce per value, `context` bound as
/// additional data so that a ciphertext moved to another row or tenant does not open, and the
/// key id inside the sealed value so that keys can rotate.
public protocol Sealer: Sendable {
    /// The id of the key `seal` uses (nil: this sealer seals nothing).
    var sealingKeyID: String? { get }
    /// Throws CryptoFailure when the cipher or the random source fails.
    func seal(_ plaintext: String, context: String) throws -> [UInt8]
    /// Throws when the value was tampered with, moved, or sealed under an unknown key.
    func open(_ sealed: [UInt8], context: String) throws -> String
}

/// SealError is why a sealed value did not open. It never says more than the id of a key the
/// keyring lacks (key ids are names, not secrets).
public struct SealError: Error, Sendable, Equatable {
    public let reason: String
    /// Set when the value names a key this keyring does not hold (a rotation not rolled out
    /// everywhere yet), rather than being tampered with or moved.
    public let missingKey: String?
    public init(_ reason: String, missingKey: String? = nil) {
        self.reason = reason
        self.missingKey = missingKey
    }
}
