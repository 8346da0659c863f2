/// CryptoFailure is a cryptography library call that failed (the system random source, a
/// digest, a cipher, a signature, a key). It names the call and nothing else: whatever the
/// library says about it could describe key material. A request that meets one is answered 500
/// `internal_error`, its log line naming the call; the process keeps serving.
public struct CryptoFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The library function that failed, such as `EVP_EncryptInit_ex`.
    public let operation: String
    public init(_ operation: String) { self.operation = operation }
    public var description: String { "cryptography call failed: \(operation)" }
}
