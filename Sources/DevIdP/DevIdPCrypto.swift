import BrokerCrypto

/// DevIdPCrypto is how the development provider calls the cryptography library: a failing call
/// stops the provider. It is a test tool beside the broker, and a test is better failed loudly
/// than answered with a token that was not signed. (The broker answers such a request 500
/// `internal_error` and keeps serving: CryptoFailure.)
enum DevIdPCrypto {
    static func sha256(_ s: String) -> [UInt8] { must { try SHA256.hash(s) } }
    static func sha256(_ b: [UInt8]) -> [UInt8] { must { try SHA256.hash(b) } }

    static func must<T>(_ call: () throws -> T) -> T {
        do { return try call() } catch { fatalError("development IdP: \(error)") }
    }
}
