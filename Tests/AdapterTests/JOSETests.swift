import Broker
import BrokerCore
import BrokerCrypto
import Foundation
import Testing

/// A fixed key set, counting how often it was asked to re-fetch.
final class StaticKeySet: KeySetSource, @unchecked Sendable {
    var keys: [JSONWebKey]
    var refetches = 0
    init(_ keys: [JSONWebKey]) { self.keys = keys }
    func keys(_ source: MetadataSource, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] {
        if refetch != nil { refetches += 1 }
        return keys
    }
}

@Suite("JWS signatures and ID-token verification with OpenSSL")
struct JOSETests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let verifier = OpenSSLSignatureVerifier()

    func claims(_ extra: [String: Any] = [:]) -> [String: Any] {
        var c: [String: Any] = ["iss": "https://idp.example", "aud": "app", "sub": "alice", "nonce": "n-1",
                                "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 600]
        for (k, v) in extra { c[k] = v }
        return c
    }

    var expectation: IDTokenExpectation { IDTokenExpectation(issuer: "https://idp.example", clientID: "app", nonce: "n-1") }

    @Test("ES256, RS256 and PS256 signatures verify; one flipped bit does not", arguments: JWSAlgorithm.allCases)
    func roundTrip(_ alg: JWSAlgorithm) throws {
        let key = try SigningKey.generate(alg)
        let token = try key.jws(claims(), kid: "k", type: "JWT")
        let jws = try CompactJWS.parse(token)
        #expect(try verifier.verify(alg, key: key.jwk(kid: "k"), input: jws.signingInput, signature: jws.signature))
        var bad = jws.signature
        bad[bad.count / 2] ^= 1
        #expect(try !verifier.verify(alg, key: key.jwk(kid: "k"), input: jws.signingInput, signature: bad))
        #expect(try !verifier.verify(alg, key: SigningKey.generate(alg).jwk(kid: "k"), input: jws.signingInput, signature: jws.signature))
    }

    @Test("a key is only used with the algorithm it allows")
    func algorithmBinding() throws {
        let rsa = try RSAPrivateKey()
        let token = try SigningKey.rsa(rsa, .rs256).jws(claims(), kid: "k", type: "JWT")
        let jws = try CompactJWS.parse(token)
        #expect(try verifier.verify(.rs256, key: rsa.jwk(kid: "k", alg: .rs256), input: jws.signingInput, signature: jws.signature))
        #expect(try !verifier.verify(.ps256, key: rsa.jwk(kid: "k", alg: .rs256), input: jws.signingInput, signature: jws.signature))
        #expect(try !verifier.verify(.es256, key: rsa.jwk(kid: "k", alg: .rs256), input: jws.signingInput, signature: jws.signature))
    }

    @Test("JWKS members of unknown type, curve or use are skipped, not fatal")
    func jwkParsing() throws {
        #expect(JSONWebKey(json: ["kty": "OKP", "crv": "Ed25519", "x": "AA"]) == nil)
        #expect(JSONWebKey(json: ["kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"]) == nil)
        #expect(JSONWebKey(json: ["kty": "RSA", "n": "AA", "e": "AQAB", "use": "enc"]) == nil)
        #expect(JSONWebKey(json: ["kty": "oct", "k": "c2VjcmV0"]) == nil)
        #expect(JSONWebKey(json: ["kty": "RSA", "n": "AA", "e": "AQAB", "kid": "r"])?.kid == "r")
        #expect(PublicKeyCheck.rejects(JSONWebKey(kty: "EC", kid: nil, crv: "P-256", x: Base64URL.encode([UInt8](repeating: 1, count: 32)),
                                                  y: Base64URL.encode([UInt8](repeating: 2, count: 32)))))
    }

    @Test("the verifier accepts a good token and keeps the claims worth keeping")
    func verifies() throws {
        let key = try SigningKey.generate(.es256)
        let keys = StaticKeySet([try key.jwk(kid: "k1")])
        let v = JWTVerifier(keys: keys, signatures: verifier)
        let token = try key.jws(claims(["sid": "s-1", "auth_time": 1_799_999_000, "email": "a@x"]), kid: "k1", type: "JWT")
        let got = try v.verify(token, expectation, trustAnchors: nil, now: now)
        #expect(got.subject == "alice" && got.claims.sid == "s-1" && got.claims.email == "a@x")
        #expect(keys.refetches == 0)
    }

    @Test("an unknown kid makes one re-fetch; a known kid with a bad signature none")
    func rotation() throws {
        let old = try SigningKey.generate(.es256), new = try SigningKey.generate(.es256)
        let keys = StaticKeySet([try old.jwk(kid: "k1")])
        let v = JWTVerifier(keys: keys, signatures: verifier)
        let token = try new.jws(claims(), kid: "k2", type: "JWT")
        #expect(throws: JWTVerifier.Failure.self) { try v.verify(token, expectation, trustAnchors: nil, now: now) }
        #expect(keys.refetches == 1)
        keys.keys.append(try new.jwk(kid: "k2"))    // the IdP now publishes it
        keys.refetches = 0
        _ = try v.verify(token, expectation, trustAnchors: nil, now: now)
        // A known kid with a bad signature is a forgery: no re-fetch.
        #expect(throws: JWTVerifier.Failure.self) { try v.verify(old.jws(claims(), kid: "k2", type: "JWT"), expectation, trustAnchors: nil, now: now) }
        #expect(keys.refetches == 0)
    }

    @Test("alg none, HS256 and unknown algorithms are refused before any key is consulted")
    func symmetricAndNone() throws {
        let keys = StaticKeySet([try SigningKey.generate(.es256).jwk(kid: "k1")])
        let v = JWTVerifier(keys: keys, signatures: verifier)
        for alg in ["none", "HS256", "HS512", "ES512", "RS384"] {
            let token = try CompactJWS.make(header: ["alg": alg, "kid": "k1"], claims: claims()) { _ in [1, 2, 3] }
            #expect(throws: JWTVerifier.Failure.self) { try v.verify(token, expectation, trustAnchors: nil, now: now) }
        }
        #expect(keys.refetches == 0)
    }

    @Test("a typ of at+jwt or a crit header is refused")
    func headers() throws {
        let key = try SigningKey.generate(.es256)
        let v = JWTVerifier(keys: StaticKeySet([try key.jwk(kid: "k1")]), signatures: verifier)
        #expect(throws: JWTVerifier.Failure.self) { try v.verify(key.jws(claims(), kid: "k1", type: "at+jwt"), expectation, trustAnchors: nil, now: now) }
        let crit = try CompactJWS.make(header: ["alg": "ES256", "kid": "k1", "crit": ["b64"], "b64": false], claims: claims(), sign: key.sign)
        #expect(throws: JWTVerifier.Failure.self) { try v.verify(crit, expectation, trustAnchors: nil, now: now) }
    }
}

/// Whether OpenSSL refuses a JWK as a public key (a point off the curve, a weak RSA modulus).
enum PublicKeyCheck {
    static func rejects(_ jwk: JSONWebKey) -> Bool {
        !OpenSSLSignatureVerifier().verify(.es256, key: jwk, input: [1], signature: [UInt8](repeating: 1, count: 64))
    }
}
