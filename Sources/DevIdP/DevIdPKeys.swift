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
        keys = Dictionary(uniqueKeysWithValues: JWSAlgorithm.allCases.map { ($0, SigningKey.generate($0)) })
        retired = old.map { $0.published } ?? []
    }

    func kid(_ alg: JWSAlgorithm) -> String { "\(alg.rawValue.lowercased())-\(generation)" }

    func sign(_ claims: [String: Any], alg: JWSAlgorithm, type: String) -> String {
        keys[alg]!.jws(claims, kid: kid(alg), type: type)
    }

    var published: [JSONWebKey] {
        JWSAlgorithm.allCases.map { keys[$0]!.jwk(kid: kid($0)) } + retired
    }
}
