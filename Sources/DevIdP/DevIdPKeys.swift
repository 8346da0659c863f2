import BrokerCore
import BrokerCrypto

/// DevIdPKeys are the provider's token-signing keys: one per algorithm (ES256, RS256, PS256),
/// named `<alg>-<generation>`. Rotation makes a new generation; the JWKS then publishes only
/// the new keys (or both generations, when asked), as an IdP rotating its keys would.
struct DevIdPKeys: Sendable {
    let generation: Int
    let keys: [JWSAlgorithm: SigningKey]
    let retired: [JSONWebKey]

    init(generation: Int, keepingOld old: DevIdPKeys? = nil) {
        self.generation = generation
        keys = Dictionary(uniqueKeysWithValues: JWSAlgorithm.allCases.map { alg in (alg, DevIdPCrypto.must { try SigningKey.generate(alg) }) })
        retired = old.map { $0.published } ?? []
    }

    func kid(_ alg: JWSAlgorithm) -> String { "\(alg.rawValue.lowercased())-\(generation)" }

    func sign(_ claims: [String: Any], alg: JWSAlgorithm, type: String) -> String {
        DevIdPCrypto.must { try keys[alg]!.jws(claims, kid: kid(alg), type: type) }
    }

    var published: [JSONWebKey] {
        JWSAlgorithm.allCases.map { alg in DevIdPCrypto.must { try keys[alg]!.jwk(kid: kid(alg)) } } + retired
    }
}
