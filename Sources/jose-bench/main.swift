import Broker
import BrokerCore
import BrokerCrypto
import Foundation

// jose-bench: ID-token verifications per second on one thread, in process — the whole check the
// callback makes (parse, alg, key lookup by kid, OpenSSL signature, claims) — for ES256, RS256
// and PS256; and DPoP proofs minted per second (RFC 9449: claims, `ath` over a token, ES256
// signature), as a worker's token hand-out mints them. Prints one JSON object (read by bench/bench.py).

/// The issuer's keys, already fetched (the broker's JWKS cache on a hit).
struct FixedKeys: KeySetSource {
    let keys: [JSONWebKey]
    func keys(_ source: MetadataSource, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] { keys }
}

let seconds = Double(ProcessInfo.processInfo.environment["JOSE_BENCH_SECONDS"] ?? "2") ?? 2
let now = Date()
var out: [String: Any] = [:]
let only = ProcessInfo.processInfo.environment["JOSE_BENCH_ONLY"]
for alg in JWSAlgorithm.allCases where only == nil || only == "id_token" {
    let key = try SigningKey.generate(alg)
    // A JWKS like XID's: several keys, the token names one.
    let keys = FixedKeys(keys: [try SigningKey.generate(.es256).jwk(kid: "old"), try key.jwk(kid: "current"), try SigningKey.generate(.rs256).jwk(kid: "other")])
    let verifier = JWTVerifier(keys: keys, signatures: OpenSSLSignatureVerifier())
    let t = Int(now.timeIntervalSince1970)
    let token = try key.jws(["iss": "https://idp.example", "aud": "app", "sub": "alice", "nonce": "n", "iat": t, "exp": t + 600,
                         "sid": "s", "auth_time": t], kid: "current", type: "JWT")
    let expect = IDTokenExpectation(issuer: "https://idp.example", clientID: "app", nonce: "n")
    _ = try verifier.verify(token, expect, trustAnchors: nil, now: now)   // warm-up; must pass
    var n = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed = 0.0
    while elapsed < seconds {
        for _ in 0..<100 { _ = try verifier.verify(token, expect, trustAnchors: nil, now: now) }
        n += 100
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
    out["id_token_verify_per_s_\(alg.rawValue.lowercased())"] = Int(Double(n) / elapsed)
}
// DPoP proofs as the hand-out makes them: the session's key loaded once, a fresh jti and ath each.
let prover = try DPoPProof(key: try SigningKey.generate(.es256), digest: OpenSSLDigest())
let accessToken = String(repeating: "a", count: 600)
var proofs = 0
let proofStart = DispatchTime.now().uptimeNanoseconds
var proofElapsed = 0.0
while proofElapsed < seconds {
    for _ in 0..<100 { _ = try prover.make(htm: "GET", htu: "https://api.example/v1/items", at: now, accessToken: accessToken) }
    proofs += 100
    proofElapsed = Double(DispatchTime.now().uptimeNanoseconds - proofStart) / 1e9
}
out["dpop_proofs_per_s_in_process"] = Int(Double(proofs) / proofElapsed)
print(String(decoding: try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys]), as: UTF8.self))
