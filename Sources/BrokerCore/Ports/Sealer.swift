import Foundation

/// Sealer encrypts secrets at rest (spec §6): a fresh nonce per value, `context` bound as
/// additional data so that a ciphertext moved to another row or tenant does not open, and the
/// key id inside the sealed value so that keys can rotate.
public protocol Sealer: Sendable {
    func seal(_ plaintext: String, context: String) -> [UInt8]
    /// Throws when the value was tampered with, moved, or sealed under an unknown key.
    func open(_ sealed: [UInt8], context: String) throws -> String
}

/// SealError is why a sealed value did not open. It never says more.
public struct SealError: Error, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}
