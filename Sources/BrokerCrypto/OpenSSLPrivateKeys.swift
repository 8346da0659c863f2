import BrokerCore

/// OpenSSLPrivateKeys is PrivateKeys on SigningKey (OpenSSL 3).
public struct OpenSSLPrivateKeys: PrivateKeys {
    public init() {}

    public func generate(_ alg: JWSAlgorithm) throws -> [UInt8] { try SigningKey.generate(alg).der }

    public func publicKey(der: [UInt8], alg: JWSAlgorithm) throws -> JSONWebKey? { try SigningKey.load(der: der, alg: alg)?.jwk(kid: "") }

    public func jws(der: [UInt8], alg: JWSAlgorithm, claims: [String: Any], kid: String, type: String) throws -> String? {
        try SigningKey.load(der: der, alg: alg)?.jws(claims, kid: kid, type: type)
    }

    public func signer(der: [UInt8], alg: JWSAlgorithm) -> (any JWSSigner)? { SigningKey.load(der: der, alg: alg) }
}
