import BrokerCore
import Foundation
import Testing

@Suite("Trust anchor bundles: their shape")
struct TrustAnchorRulesTests {
    static let cert = "-----BEGIN CERTIFICATE-----\nQUFB\n-----END CERTIFICATE-----\n"

    @Test("blocks are found in order, text between them ignored as in any CA bundle file")
    func blocksInOrder() {
        let pem = "# corporate roots\n" + Self.cert + "subject=...\n" + Self.cert.replacingOccurrences(of: "QUFB", with: "QkJC")
        let blocks = TrustAnchorRules.blocks(pem)
        #expect(blocks?.count == 2)
        #expect(blocks?.last?.text.contains("QkJC") == true)
        #expect(TrustAnchorRules.shapeProblem(pem) == nil)
    }

    @Test("nothing, a BEGIN without END, too many or too large: refused, saying which")
    func refusals() {
        #expect(TrustAnchorRules.shapeProblem("")?.hasPrefix("no certificate found") == true)
        #expect(TrustAnchorRules.shapeProblem("not a certificate")?.hasPrefix("no certificate found") == true)
        #expect(TrustAnchorRules.shapeProblem("-----BEGIN CERTIFICATE-----\nQUFB\n") == "a PEM block has no END line")
        #expect(TrustAnchorRules.shapeProblem(String(repeating: Self.cert, count: TrustAnchorRules.maxCertificates + 1))
                == "more than \(TrustAnchorRules.maxCertificates) certificates")
        #expect(TrustAnchorRules.shapeProblem(Self.cert + String(repeating: "#", count: TrustAnchorRules.maxBytes))?.contains("larger") == true)
    }

    @Test("a private key pasted among the certificates is named by its label only, never shown")
    func otherBlocksNamedByLabel() {
        let key = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n"
        let problem = TrustAnchorRules.shapeProblem(Self.cert + key)
        #expect(problem == "block 2 is not a certificate (it is labelled PRIVATE KEY)")
        #expect(problem?.contains("c2VjcmV0") == false)
    }
}
