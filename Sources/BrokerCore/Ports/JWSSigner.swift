/// JWSSigner is a private key loaded once and ready to sign many JWS values: a session's DPoP
/// key, whose proofs are made per token hand-out and must not pay for parsing the key each time.
public protocol JWSSigner: Sendable {
    var algorithm: JWSAlgorithm { get }
    /// The public half, without `kid`.
    var publicKey: JSONWebKey { get throws }
    /// The JWS signature of `message` (RFC 7515 §5.1), in the form JOSE expects for the algorithm.
    /// Throws CryptoFailure when the library fails to sign.
    func sign(_ message: [UInt8]) throws -> [UInt8]
}
