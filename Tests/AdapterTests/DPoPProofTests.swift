import BrokerCore
import BrokerCrypto
import Foundation
import Testing

@Suite("DPoP proofs (RFC 9449) made with OpenSSL keys")
struct DPoPProofTests {
    let digest = OpenSSLDigest()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The proof taken apart: header, claims, and whether its own `jwk` verifies its signature.
    func open(_ proof: String, _ alg: JWSAlgorithm) throws -> (header: [String: Any], claims: [String: Any], verifies: Bool, jwk: JSONWebKey) {
        let parts = proof.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let header = try #require(try JSONSerialization.jsonObject(with: Data(Base64URL.decode(parts[0])!)) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(Base64URL.decode(parts[1])!)) as? [String: Any])
        let jwk = try #require(JSONWebKey(json: header["jwk"] as? [String: Any] ?? [:]))
        let ok = OpenSSLSignatureVerifier().verify(alg, key: jwk, input: Array((parts[0] + "." + parts[1]).utf8), signature: Base64URL.decode(parts[2])!)
        return (header, claims, ok, jwk)
    }

    @Test("RFC 9449's examples: the jkt of §4.2's key (RFC 7638 thumbprint, §6.1) and the ath of §7.1's access token")
    func rfcExamples() throws {
        let key = JSONWebKey(kty: "EC", kid: nil, crv: "P-256", x: "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
                             y: "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA")
        #expect(try Base64URL.encode(digest.sha256(key.thumbprintInput)) == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        #expect(try DPoPProof.accessTokenHash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU", digest) == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
    }

    @Test("a proof (ES256 and PS256): typ dpop+jwt, the public key only, htm, htu without query and fragment, iat, fresh jti, nonce and ath when given; its signature verifies with its own jwk")
    func proofShape() throws {
        for alg in [JWSAlgorithm.es256, .ps256] {
            let signer = try #require(OpenSSLPrivateKeys().signer(der: OpenSSLPrivateKeys().generate(alg), alg: alg))
            let p = try DPoPProof(key: signer, digest: digest)
            let a = try open(p.make(htm: "POST", htu: "https://Server.Example.com/token?x=1#frag", at: now), alg)
            #expect(a.verifies)
            #expect(a.header["typ"] as? String == "dpop+jwt" && a.header["alg"] as? String == alg.rawValue && a.header["kid"] == nil)
            let members = Set((a.header["jwk"] as? [String: Any] ?? [:]).keys)
            #expect(members == (alg == .es256 ? ["kty", "crv", "x", "y"] : ["kty", "n", "e"]), "\(members)")
            #expect(a.claims["htm"] as? String == "POST" && a.claims["htu"] as? String == "https://server.example.com/token")
            #expect(a.claims["iat"] as? Int == 1_800_000_000 && a.claims["ath"] == nil && a.claims["nonce"] == nil)
            #expect(try Base64URL.encode(digest.sha256(a.jwk.thumbprintInput)) == p.thumbprint)
            let b = try open(p.make(htm: "GET", htu: "https://rs.example/x", at: now, nonce: "n-1", accessToken: "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"), alg)
            #expect(b.verifies && b.claims["nonce"] as? String == "n-1" && b.claims["ath"] as? String == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
            #expect((a.claims["jti"] as? String)?.count ?? 0 >= 22 && a.claims["jti"] as? String != b.claims["jti"] as? String)
            // Whatever a server's nonce holds, the claims stay JSON and carry it unchanged.
            let odd = "q\"b\\s\u{01}é"
            let c = try open(p.make(htm: "GET", htu: "https://rs.example/x", at: now, nonce: odd), alg)
            #expect(c.verifies && c.claims["nonce"] as? String == odd)
        }
    }

    @Test("htu is an absolute http(s) URI; targets and nonces a proof cannot carry are refused")
    func targets() throws {
        #expect(DPoPProof.targetURI("https://a.example:8443/p/q?x#y") == "https://a.example:8443/p/q")
        #expect(DPoPProof.targetURI("ftp://a.example/x") == nil && DPoPProof.targetURI("/relative") == nil && DPoPProof.targetURI("https://") == nil)
        #expect(try DPoPTarget(method: "GET", uri: "HTTPS://A.example/x?q#f", nonce: "abc").uri == "https://a.example/x")
        #expect(throws: DPoPTarget.Invalid.self) { try DPoPTarget(method: "G E T", uri: "https://a.example/x", nonce: nil) }
        #expect(throws: DPoPTarget.Invalid.self) { try DPoPTarget(method: "GÉT", uri: "https://a.example/x", nonce: nil) }
        #expect(throws: DPoPTarget.Invalid.self) { try DPoPTarget(method: "GET", uri: "mailto:x@y", nonce: nil) }
        #expect(throws: DPoPTarget.Invalid.self) { try DPoPTarget(method: "GET", uri: "https://a.example/x", nonce: "a\\b") }
        #expect(throws: DPoPTarget.Invalid.self) { try DPoPTarget(method: "GET", uri: "https://a.example/x", nonce: "") }
        #expect(throws: DPoPTarget.Invalid.self) { try DPoPTarget(method: "GET", uri: "https://a.example/x", nonce: "é") }
    }

    @Test("a session's key material survives its sealed form; anything else is not a key")
    func keyMaterial() throws {
        let m = DPoPKeyMaterial(algorithm: .es256, der: try OpenSSLPrivateKeys().generate(.es256))
        #expect(DPoPKeyMaterial(encoded: m.encoded) == m)
        #expect(DPoPKeyMaterial(encoded: "HS256:AAAA") == nil && DPoPKeyMaterial(encoded: "ES256:") == nil && DPoPKeyMaterial(encoded: "x") == nil)
        #expect(OpenSSLPrivateKeys().signer(der: [1, 2, 3], alg: .es256) == nil)
    }
}
