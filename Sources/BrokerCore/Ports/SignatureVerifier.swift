/// SignatureVerifier checks JWS signatures with public keys (RFC 7515 §5.2). Implemented with
/// OpenSSL; thread-safe.
public protocol SignatureVerifier: Sendable {
    /// Whether `signature` is a valid `alg` signature of `input` by `key`. False also when the
    /// key is malformed or too weak (RSA under 2048 bits).
    func verify(_ alg: JWSAlgorithm, key: JSONWebKey, input: [UInt8], signature: [UInt8]) -> Bool
}
