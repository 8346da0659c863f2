import BrokerCore
import BrokerCrypto
import Foundation
import Testing

/// The OpenSSL side of a client's TLS client certificate (RFC 8705 §2). The certificate and keys
/// are fixtures made for this test only: a self-signed P-256 certificate for
/// `CN=mtls-client,O=Example`, valid from 2026-12-06T18:34:40Z to 2036-12-03T18:34:40Z, its key,
/// and an unrelated key. `now` is an argument, so expiry needs no backdating.
@Suite("Client certificates checked with OpenSSL")
struct ClientCertificateCheckTests {
    static let certificate = """
-----BEGIN CERTIFICATE-----
MIIBpTCCAUugAwIBAgIUSYOecJmUVz9cw0pHg4VBGL8AL3owCgYIKoZIzj0EAwIw
KDEQMA4GA1UECgwHRXhhbXBsZTEUMBIGA1UEAwwLbXRscy1jbGllbnQwHhcNMjYx
MjA2MTgzNDQwWhcNMzYxMjAzMTgzNDQwWjAoMRAwDgYDVQQKDAdFeGFtcGxlMRQw
EgYDVQQDDAttdGxzLWNsaWVudDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABLW/
iJbiS9vEEvCsweHj+UpBhARmoQ6uNN1M+BJsEiFBEu9P8ENwr8Ze1cfkJQqUWc8w
Nos+YsVhMtvqJuTbFpajUzBRMB0GA1UdDgQWBBR2Uw1k1ipm7KR2bqerxceATWJX
czAfBgNVHSMEGDAWgBR2Uw1k1ipm7KR2bqerxceATWJXczAPBgNVHRMBAf8EBTAD
AQH/MAoGCCqGSM49BAMCA0gAMEUCIHfwlEfnp/T6NwskAT8ePlU+1XF4EC5porfp
FNME2yp2AiEAznbbhKLtnJv/thHD15Pw8x5sqSs9baAKEn7VmYe9BhM=
-----END CERTIFICATE-----
"""
    static let key = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJHKFdeKuOFOWJIqZ
i2TuJiAKvwQ2ajHAMiwqjGMyX1OhRANCAAS1v4iW4kvbxBLwrMHh4/lKQYQEZqEO
rjTdTPgSbBIhQRLvT/BDcK/GXtXH5CUKlFnPMDaLPmLFYTLb6ibk2xaW
-----END PRIVATE KEY-----
"""
    static let otherKey = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg9YJzieMlUvM6IgqO
Rwy1YF28MBWAEjfJdHyjMCHyQ0+hRANCAAQ/gVKhB/cXyj54osHfMph/XPO66rAb
spQzRTJyv21C4D+mWKPpy5gxTwRTFU8LuoSImrzbYxlDxWo3citKp/c0
-----END PRIVATE KEY-----
"""
    let check = OpenSSLClientCertificates()
    let inside = Date(timeIntervalSince1970: 1_900_000_000)   // 2030

    func problem(_ chain: String, _ key: String, now: Date? = nil) -> String? {
        if case .failure(let p) = check.inspect(chain: chain, key: key, now: now ?? inside) { return p.message }
        return nil
    }

    @Test("a certificate with its key gives the x5t#S256 thumbprint, the RFC 4514 subject and notAfter")
    func view() throws {
        let info = try check.inspect(chain: Self.certificate, key: Self.key, now: inside).get()
        #expect(info.thumbprint == "u6QWgDyhWWQwbDdkweGXz2ozwNYRX_NX0jpZ3fpIjNo")   // openssl x509 -outform DER | sha256 | base64url
        #expect(info.subject == "CN=mtls-client,O=Example")
        #expect(info.notAfter == Date(timeIntervalSince1970: 2_111_942_080))
    }

    @Test("a key that is not the certificate's is refused, and the refusal quotes no key")
    func keyMismatch() {
        let p = problem(Self.certificate, Self.otherKey)
        #expect(p == "tls_client_key: is not the private key of the certificate (certificate 1)")
        #expect(p?.contains("MIGHA") == false)
    }

    @Test("an expired certificate, or one not yet valid, is refused with the date")
    func validity() {
        #expect(problem(Self.certificate, Self.key, now: Date(timeIntervalSince1970: 2_200_000_000))
                == "tls_client_certificate: certificate 1 expired at 2036-12-03T18:34:40Z")
        #expect(problem(Self.certificate, Self.key, now: Date(timeIntervalSince1970: 1_700_000_000))
                == "tls_client_certificate: certificate 1 is not valid before 2026-12-06T18:34:40Z")
    }

    @Test("PEM that does not parse is refused, naming the member and the block")
    func unparsable() {
        let bad = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
        #expect(problem(bad, Self.key) == "tls_client_certificate: certificate 1 does not parse as an X.509 certificate")
        #expect(problem(Self.certificate + "\n" + bad, Self.key) == "tls_client_certificate: certificate 2 does not parse as an X.509 certificate")
        #expect(problem("not PEM", Self.key)?.hasPrefix("tls_client_certificate: no certificate found") == true)
        let badKey = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
        #expect(problem(Self.certificate, badKey) == "tls_client_key: does not parse as an unencrypted private key")
    }

    @Test("an encrypted key, two keys, or a key in the certificate member are refused by their labels")
    func shapes() {
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
        #expect(problem(Self.certificate, encrypted)?.hasPrefix("tls_client_key: must be one unencrypted private key") == true)
        #expect(problem(Self.certificate, Self.key + "\n" + Self.otherKey)?.hasPrefix("tls_client_key: must be one") == true)
        #expect(problem(Self.certificate + "\n" + Self.key, Self.key)
                == "tls_client_certificate: block 2 is not a certificate (it is labelled PRIVATE KEY)")
    }

    @Test("a chain is the client's certificate first, then each issuer: the leaf sent after its CA, or a certificate that did not issue the one before, is refused as out of order")
    func chainOrder() throws {
        let pki = try Self.chainWithCA()
        #expect(problem(pki.leaf + pki.ca, pki.key, now: Date()) == nil)
        #expect(problem(pki.ca + pki.leaf, pki.key, now: Date())
                == "tls_client_certificate: the chain is in the wrong order: the key is that of certificate 2; the client's own certificate comes first, then each issuer")
        #expect(problem(pki.leaf + Self.certificate, pki.key, now: Date())
                == "tls_client_certificate: the chain is in the wrong order: certificate 2 did not issue certificate 1; the client's own certificate comes first, then each issuer")
    }

    /// A CA and a client certificate it issued, made with the openssl command for this test.
    static func chainWithCA() throws -> (ca: String, leaf: String, key: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func openssl(_ args: [String]) throws { try OpenSSLCLI.run(args, in: dir) }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try openssl(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=chain-ca",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign"])
        try openssl(["req", "-new"] + ec + ["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=chain-client"])
        try openssl(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "1"])
        func read(_ f: String) throws -> String { try String(contentsOf: dir.appendingPathComponent(f), encoding: .utf8) }
        return (try read("ca.pem"), try read("leaf.pem"), try read("leaf.key"))
    }
}
