import BrokerCore
import Foundation

/// AssertionKeys holds the broker's own `private_key_jwt` keys, one per client, sealed in the
/// registry: it makes them, shows their public halves (named by their RFC 7638 thumbprint), and
/// signs client assertions with them (RFC 7523 §3: `iss` = `sub` = client_id, `aud` = the
/// endpoint called, `exp` one minute ahead, a fresh `jti`).
public struct AssertionKeys: ClientAssertionSigner {
    let registry: RegistryCache
    let digest: any Digest
    let keys: any PrivateKeys

    public init(registry: RegistryCache, digest: any Digest, keys: any PrivateKeys) {
        self.registry = registry
        self.digest = digest
        self.keys = keys
    }

    /// A new key for `alg`, as DER.
    func generate(_ alg: JWSAlgorithm) throws -> [UInt8] { try keys.generate(alg) }

    /// The public half of a stored key, its thumbprint as kid; nil when `der` is not a key of `alg`.
    func publicKey(der: [UInt8], alg: JWSAlgorithm) throws -> JSONWebKey? {
        try keys.publicKey(der: der, alg: alg).map { $0.named(Base64URL.encode(try digest.sha256($0.thumbprintInput))) }
    }

    public func assertion(for client: ClientRegistration, audience: String, now: Date) throws -> String {
        guard let alg = client.assertionAlgorithm, let der = try registry.assertionKey(tenant: client.tenant, id: client.id, now: now),
              let kid = try publicKey(der: der, alg: alg)?.kid else { throw BrokerError.internalError }
        var rng = SystemRandomNumberGenerator()
        let t = Int(now.timeIntervalSince1970)
        guard let jws = try keys.jws(der: der, alg: alg, claims: ["iss": client.clientID, "sub": client.clientID, "aud": audience, "iat": t,
                                                               "exp": t + 60, "jti": Identifiers.token(bytes: 16, using: &rng)],
                                 kid: kid, type: "JWT") else { throw BrokerError.internalError }
        return jws
    }
}
