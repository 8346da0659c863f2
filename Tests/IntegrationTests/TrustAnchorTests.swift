import Foundation
import Testing

/// A client registration's own trust anchors over HTTP against the real broker: bad bundles are
/// 400 naming the fault, and the registration stays as it was.
@Suite("Trust anchors at registration: precise 400s, nothing changed", .serialized)
struct TrustAnchorTests {
    func registration(_ w: World, anchors: Any) -> [String: Any] {
        ["issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "redirect_uri": w.redirectURI,
         "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL], "trust_anchors": anchors]
    }

    func pem(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    @Test("a PEM that does not parse, a certificate that is no CA, an expired CA: 400 invalid_trust_anchors naming the certificate and the fault; the client unchanged")
    func refusedBundles() async throws {
        let w = try await World()
        defer { w.stop() }
        let ca = try TestCA(name: "anchor-ca")
        let valid = try pem(ca.certificate)
        let leaf = try pem(try ca.issue("provider", server: true).cert)
        let expired = try pem(try ca.pastCA("expired-ca"))
        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)"
        let before = try await HTTP.get(url, key: w.operatorKey)
        try expectStatus(before, 200)
        #expect(before.json["trust_anchors"] is NSNull)

        var shown = before.json as NSDictionary
        func refused(_ anchors: Any, saying fault: String) async throws {
            let r = try await HTTP.put(url, key: w.operatorKey, json: registration(w, anchors: anchors))
            try expectStatus(r, 400)
            #expect(r["error"] as? String == "invalid_trust_anchors")
            let message = r["message"] as? String ?? ""
            #expect(message.contains(fault), "\(message)")
            let after = try await HTTP.get(url, key: w.operatorKey)
            #expect(after.json as NSDictionary == shown, "a refused registration changed the client")
        }
        let garbage = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
        try await refused(valid + garbage, saying: "certificate 2 does not parse as an X.509 certificate")
        try await refused("just text", saying: "no certificate found")
        try await refused(leaf, saying: "certificate 1 is not a CA")
        try await refused(valid + expired, saying: "certificate 2 expired at 2021-01-01T00:00:00Z")
        try await refused("", saying: "no certificate found")
        try await refused(String(repeating: valid, count: 40), saying: "more than 32 certificates")
        let key = try pem(ca.path("anchor-ca.key"))
        try await refused(valid + key, saying: "block 2 is not a certificate")
        try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: registration(w, anchors: 42)), 400)

        // A good bundle is stored and shown verbatim; a bad one after it leaves it in place; null goes back to the deployment's.
        let good = try await HTTP.put(url, key: w.operatorKey, json: registration(w, anchors: valid))
        try expectStatus(good, 200)
        #expect(good["trust_anchors"] as? String == valid)
        shown = try await HTTP.get(url, key: w.operatorKey).json as NSDictionary
        try await refused(expired, saying: "certificate 1 expired at")
        #expect(try await HTTP.get(url, key: w.operatorKey)["trust_anchors"] as? String == valid)
        try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: registration(w, anchors: NSNull())), 200)
        #expect(try await HTTP.get(url, key: w.operatorKey).json["trust_anchors"] is NSNull)
    }
}
