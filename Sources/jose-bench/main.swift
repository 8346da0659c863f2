import Broker
import BrokerCore
import BrokerCrypto
import Foundation

// jose-bench: ID-token verifications per second on one thread, in process — the whole check the
// callback makes (parse, alg, key lookup by kid, OpenSSL signature, claims) — for ES256, RS256
// and PS256. Prints one JSON object (read by bench/bench.py).

/// The issuer's keys, already fetched (the broker's JWKS cache on a hit).
struct FixedKeys: KeySetSource {
    let keys: [JSONWebKey]
    func keys(issuer: String, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] { keys }
}

let seconds = Double(ProcessInfo.processInfo.environment["JOSE_BENCH_SECONDS"] ?? "2") ?? 2
let now = Date()
var out: [String: Any] = [:]
for alg in JWSAlgorithm.allCases {
    let key = SigningKey.generate(alg)
    // A JWKS like XID's: several keys, the token names one.
    let keys = FixedKeys(keys: [SigningKey.generate(.es256).jwk(kid: "old"), key.jwk(kid: "current"), SigningKey.generate(.rs256).jwk(kid: "other")])
    let verifier = JWTVerifier(keys: keys, signatures: OpenSSLSignatureVerifier())
    let t = Int(now.timeIntervalSince1970)
    let token = key.jws(["iss": "https://idp.example", "aud": "app", "sub": "alice", "nonce": "n", "iat": t, "exp": t + 600,
                         "sid": "s", "auth_time": t], kid: "current", type: "JWT")
    let expect = IDTokenExpectation(issuer: "https://idp.example", clientID: "app", nonce: "n")
    _ = try verifier.verify(token, expect, now: now)   // warm-up; must pass
    var n = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed = 0.0
    while elapsed < seconds {
        for _ in 0..<100 { _ = try verifier.verify(token, expect, now: now) }
        n += 100
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
    out["id_token_verify_per_s_\(alg.rawValue.lowercased())"] = Int(Double(n) / elapsed)
}
print(String(decoding: try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys]), as: UTF8.self))
