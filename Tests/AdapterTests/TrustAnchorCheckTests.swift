import BrokerCore
import BrokerCrypto
import Foundation
import Testing

/// The OpenSSL side of a trust anchor bundle. The certificates are fixed (public, no key kept):
/// a CA valid from 2026-12-06T02:15:37Z to 2036-12-03T02:15:37Z, and a leaf it issued with no
/// basicConstraints. `now` is an argument, so expiry is tested without backdating anything.
@Suite("Trust anchors checked with OpenSSL")
struct TrustAnchorCheckTests {
    static let ca = """
-----BEGIN CERTIFICATE-----
MIIBhzCCAS2gAwIBAgIULgAhfP3xn1UdK6o70bQrGBlhkLkwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOYW5jaG9yLXRlc3QtY2EwHhcNMjYxMjA2MDIxNTM3WhcNMzYx
MjAzMDIxNTM3WjAZMRcwFQYDVQQDDA5hbmNob3ItdGVzdC1jYTBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABNw+aLJC9vWRTieUgRduhIm4NjMBaFvqRG1Y416+0T5x
/BTnS4LxD40hi4cwCU20lD9cJeC0DanYhWgqfAj+NzSjUzBRMB0GA1UdDgQWBBSh
oi2dOfqUm0R2LYGcuRLFp2N1VTAfBgNVHSMEGDAWgBShoi2dOfqUm0R2LYGcuRLF
p2N1VTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCXiMvMLsRA
umRnktx/7KrJRfz8nMnS68fu2u0roxu73AIgUpfK5Z1tlYroUrpTpYxYEH24tPy6
ChoS/skJBPlLKEc=
-----END CERTIFICATE-----
"""
    static let leaf = """
-----BEGIN CERTIFICATE-----
MIIBIzCByQIUV5CxTHYyfuRjuItBUmMMzGa46vIwCgYIKoZIzj0EAwIwGTEXMBUG
A1UEAwwOYW5jaG9yLXRlc3QtY2EwHhcNMjYxMjA2MDIxNTM3WhcNMzYxMjAzMDIx
NTM3WjAPMQ0wCwYDVQQDDARsZWFmMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
9opzvYk/V4twNF35MshjVHnxeRym/OEh22z8prTtcRH9th7olHVHYW+ARCdomSYL
YO/u9iB2WJG/JwSYfWOw6zAKBggqhkjOPQQDAgNJADBGAiEA/P6dhqrCBKTIVzoL
kHQK7ezn6jHtecoR31d7PTBfwH4CIQCwgY1iXRFxg9gQIMfOlMJBVRZcEYNr1a3p
0xKoAWb1wA==
-----END CERTIFICATE-----
"""
    let check = OpenSSLTrustAnchors()
    let inside = Date(timeIntervalSince1970: 1_900_000_000)   // 2030

    @Test("a CA certificate valid now is accepted, alone or twice in a bundle")
    func validCA() {
        #expect(check.problem(pem: Self.ca, now: inside) == nil)
        #expect(check.problem(pem: "# roots\n" + Self.ca + "\n" + Self.ca, now: inside) == nil)
    }

    @Test("a leaf certificate is not a CA, and is named by its position")
    func leafIsNoCA() {
        #expect(check.problem(pem: Self.ca + "\n" + Self.leaf, now: inside)?.hasPrefix("certificate 2 is not a CA") == true)
    }

    @Test("a certificate is refused after its notAfter and before its notBefore, with the date")
    func validityAtNow() {
        #expect(check.problem(pem: Self.ca, now: Date(timeIntervalSince1970: 2_200_000_000)) == "certificate 1 expired at 2036-12-03T02:15:37Z")
        #expect(check.problem(pem: Self.ca, now: Date(timeIntervalSince1970: 1_700_000_000))
                == "certificate 1 is not valid before 2026-12-06T02:15:37Z")
    }

    @Test("a block that is not DER of a certificate does not parse; the rest is not looked at")
    func garbage() {
        let bad = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
        #expect(check.problem(pem: Self.ca + "\n" + bad, now: inside) == "certificate 2 does not parse as an X.509 certificate")
        #expect(check.problem(pem: "not PEM at all", now: inside)?.hasPrefix("no certificate found") == true)
    }
}
