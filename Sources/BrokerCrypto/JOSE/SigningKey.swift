import BrokerCore

/// SigningKey is a private key that signs JWS values with one algorithm: the broker's
/// `private_key_jwt` client keys, its sessions' DPoP keys, and the development IdP's token keys.
public enum SigningKey: JWSSigner {
    case es256(ES256PrivateKey)
    case rsa(RSAPrivateKey, JWSAlgorithm)

    /// A new random key for `alg`.
    public static func generate(_ alg: JWSAlgorithm) throws(CryptoFailure) -> SigningKey {
        alg == .es256 ? .es256(try ES256PrivateKey()) : .rsa(try RSAPrivateKey(), alg)
    }

    /// A key stored before as `der` for `alg`; nil when the bytes are not such a key.
    public static func load(der: [UInt8], alg: JWSAlgorithm) -> SigningKey? {
        alg == .es256 ? ES256PrivateKey(der: der).map { .es256($0) } : RSAPrivateKey(der: der).map { .rsa($0, alg) }
    }

    public var algorithm: JWSAlgorithm {
        switch self {
        case .es256: .es256
        case .rsa(_, let alg): alg
        }
    }

    public var der: [UInt8] {
        get throws(CryptoFailure) {
            switch self {
            case .es256(let k): try k.der
            case .rsa(let k, _): try k.der
            }
        }
    }

    public var publicKey: JSONWebKey { get throws { try jwk(kid: "") } }

    public func jwk(kid: String) throws(CryptoFailure) -> JSONWebKey {
        switch self {
        case .es256(let k): try k.jwk(kid: kid)
        case .rsa(let k, let alg): try k.jwk(kid: kid, alg: alg)
        }
    }

    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        switch self {
        case .es256(let k): try k.sign(message)
        case .rsa(let k, let alg): try k.sign(message, pss: alg == .ps256)
        }
    }

    /// A compact JWS of `claims` with `alg`, `kid` and `typ` in the header.
    public func jws(_ claims: [String: Any], kid: String, type: String) throws -> String {
        try CompactJWS.make(header: ["alg": algorithm.rawValue, "kid": kid, "typ": type], claims: claims, sign: sign)
    }
}
