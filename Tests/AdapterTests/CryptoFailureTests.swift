@testable import BrokerApp
import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation
import Testing

/// A cryptography call that fails throws CryptoFailure naming the call, where it used to stop
/// the process; a route answers it 500 `internal_error`, the call on its log line.
@Suite("A failing OpenSSL call is an error, not a crash")
struct CryptoFailureTests {
    /// A 512-bit RSA key (PKCS #1): too small for a PSS signature with SHA-256 and a 32-byte salt.
    static let smallRSA = Array(Data(base64Encoded: """
        MIIBOwIBAAJBANuMOLt1w+JaLMgXWqZZkl7oGnRi8KDRziyJZRBmSPtiyFsBbdQS59pAm4lpbtBGrXP52rw5Wxqha/quzHJPiYECAwEAAQJBAIpPiUIXy8LiukmH5PTdgwfFQz1FQ4CdDD0khYXSWnH7O1SCC0Yb+wpNHMvRsJUuJ0n3qiTZQsRgn/NXtKiKjtECIQD5XGY4FKP7q0mj03QTdTcRLbWbIqcIN/USeQyWNiZ1lQIhAOFknutQ6Gbe+JwysnHdRFL9cr7LMqcHSOXWFilDFDE9AiBP0p86JolTv8Ij+kV3EReenSY8UfxsKhV+Y1d/IjhvfQIgDOg/NYiPlnyETiWVFHIwXHRJIuXuA6SmJwtIf5poyJ0CIQC7zSzwzULbh3JM9zmlw4mGmoV9h7BFXgMJzv0+6NYQzg==
        """)!)
    /// An EC key on P-384 (SEC 1): it loads as an EC key, but its point and signatures do not
    /// fit ES256's P-256 sizes.
    static let p384 = Array(Data(base64Encoded: """
        MIGkAgEBBDCZDV1CTqEqWoeWDM51w4l7erAmcUDKqdzCZt3Up8hDFXDxbTuToLEvzb4/U2rgehGgBwYFK4EEACKhZANiAARg+Ad9NmLqtmrGplJPiz5VfQDJVbyXc3v6OyRplnYAJu2DKngooZabLOguQVHAIMHJJl4oIXHl7ReV+serHti0X+dyXaE3D/HuHmKdOVB7AVhH2bC92xfBefsudJg4NgY=
        """)!)

    @Test("a PS256 signature the key cannot make throws, naming EVP_DigestSign; the same key still signs RS256")
    func signatureFails() throws {
        let keys = OpenSSLPrivateKeys()
        let signer = try #require(keys.signer(der: Self.smallRSA, alg: .ps256))
        #expect(throws: CryptoFailure("EVP_DigestSign")) { try signer.sign(Array("input".utf8)) }
        #expect(throws: CryptoFailure("EVP_DigestSign")) {
            try keys.jws(der: Self.smallRSA, alg: .ps256, claims: ["sub": "a"], kid: "k", type: "JWT")
        }
        #expect(try keys.jws(der: Self.smallRSA, alg: .rs256, claims: ["sub": "a"], kid: "k", type: "JWT") != nil)
    }

    @Test("a public key the library cannot give in ES256's form throws, and so does a DPoP proof's key")
    func publicKeyFails() throws {
        let keys = OpenSSLPrivateKeys()
        let failure = CryptoFailure("EVP_PKEY_get_octet_string_param")
        #expect(throws: failure) { try keys.publicKey(der: Self.p384, alg: .es256) }
        let signer = try #require(keys.signer(der: Self.p384, alg: .es256))
        #expect(throws: failure) { try DPoPProof(key: signer, digest: OpenSSLDigest()) }
    }

    @Test("a route that meets one answers 500 internal_error, and its log line names the call")
    func routeAnswer() {
        let r = ErrorResponse.response(to: CryptoFailure("EVP_EncryptInit_ex"), requestID: "req-1")
        #expect(r.status == 500)
        #expect(String(decoding: r.body, as: UTF8.self).contains("\"error\":\"internal_error\""))
        #expect(r.logFields.contains { $0 == ("crypto_failure", "EVP_EncryptInit_ex") })
        #expect(!String(decoding: r.body, as: UTF8.self).contains("EVP_"), "the caller is told nothing about the library")
    }
}
