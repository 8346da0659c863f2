/// PrivateKeys makes and uses the broker's own signing keys — its `private_key_jwt` client keys
/// and its sessions' DPoP keys — held by callers as DER bytes (sealed in the registry), so that services sign without
/// knowing the cryptography library. A failing library call throws CryptoFailure.
public protocol PrivateKeys: Sendable {
    /// A new random key for `alg`, as DER.
    func generate(_ alg: JWSAlgorithm) throws -> [UInt8]
    /// The public half of a stored key (`kid` empty), or nil when `der` is not such a key.
    func publicKey(der: [UInt8], alg: JWSAlgorithm) throws -> JSONWebKey?
    /// A compact JWS of `claims` signed with the key (`alg`, `kid`, `typ` in the header), or nil
    /// when `der` is not such a key.
    func jws(der: [UInt8], alg: JWSAlgorithm, claims: [String: Any], kid: String, type: String) throws -> String?
    /// The key loaded for signing many values, or nil when `der` is not a key of `alg`.
    func signer(der: [UInt8], alg: JWSAlgorithm) -> (any JWSSigner)?
}
