import Broker
import BrokerCore
import BrokerCrypto
import Foundation

/// AssertionKeys holds the broker's own `private_key_jwt` keys, one per client, sealed in the
/// registry: it makes them, shows their public halves (named by their RFC 7638 thumbprint), and
/// signs client assertions with them (RFC 7523 §3: `iss` = `sub` = client_id, `aud` = the
/// endpoint called, `exp` one minute ahead, a fresh `jti`).
struct AssertionKeys: ClientAssertionSigner {
    let registry: RegistryCache
    let digest: any Digest

    /// The public key with its thumbprint as kid.
    func publicKey(_ key: SigningKey) -> JSONWebKey {
        let jwk = key.jwk(kid: "")
        return jwk.named(Base64URL.encode(digest.sha256(jwk.thumbprintInput)))
    }

    func assertion(for client: ClientRegistration, audience: String, now: Date) throws -> String {
        guard let alg = client.assertionAlgorithm, let der = try registry.assertionKey(tenant: client.tenant, id: client.id, now: now),
              let key = SigningKey.load(der: der, alg: alg) else { throw BrokerError.internalError }
        var rng = SystemRandomNumberGenerator()
        let t = Int(now.timeIntervalSince1970)
        return key.jws(["iss": client.clientID, "sub": client.clientID, "aud": audience, "iat": t, "exp": t + 60,
                        "jti": Identifiers.token(bytes: 16, using: &rng)], kid: publicKey(key).kid ?? "", type: "JWT")
    }
}
