import Foundation
import Testing

/// A client the provider refuses ("repeated failures of one issuer open a per-client
/// circuit"): the circuit answers what opened it, and a changed registration closes it on every
/// replica through the change feed. Two replicas, the development IdP over HTTP.
@Suite("A client the provider refuses", .serialized)
struct ClientRefusedTests {
    func putClient(_ w: World, replica: Int, secret: String) async throws {
        try expectStatus(try await HTTP.put(w.brokers[replica].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": secret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL]]), 200)
    }

    @Test("the IdP refuses the client's secret: every caller on both replicas gets 502 idp_client_rejected, never idp_unavailable; the fixed secret PUT on one replica lets the next forced refresh through at once on both")
    func refusedClientOnEveryReplica() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let id = try await w.importSession(subject: "refused", expiresIn: 3000)
        // The provider's secret changes under the broker (rotated at the IdP).
        let rotated = "secret-" + UUID().uuidString
        TestEnv.secret(rotated)
        try await w.idp.registerClient(w.idpClientID, secret: rotated, redirectURI: w.redirectURI)
        // Each pause outlasts the circuit, so that its probe fails again and it opens longer
        // (1 s, 2 s, then 4 s): the fix below must not be waiting for the circuit to run out.
        for (round, pause) in [0, 1_100, 2_100].enumerated() {
            try await Task.sleep(for: .milliseconds(pause))
            for replica in [0, 1, 0, 1] {
                let r = try await w.token(id, replica: replica, body: ["force_refresh": true])
                #expect(r.status == 502 && r["error"] as? String == "idp_client_rejected",
                        "round \(round), replica \(replica): \(r.status) \(r["error"] as? String ?? "-")")
            }
        }
        let plain = try await w.token(id, replica: 0, body: ["min_ttl": 60])
        #expect(plain.status == 200, "a token that still lives is served while the client is refused")
        try await putClient(w, replica: 1, secret: rotated)
        let fixed = Date()
        let here = try await w.token(id, replica: 1, body: ["force_refresh": true])
        #expect(here.status == 200, "the replica that took the PUT: \(here.status) \(here["error"] as? String ?? "-")")
        // The other replica hears of the change through the feed (within a second).
        var there = try await w.token(id, replica: 0, body: ["force_refresh": true])
        while there.status != 200, Date().timeIntervalSince(fixed) < 1 {
            try await Task.sleep(for: .milliseconds(50))
            there = try await w.token(id, replica: 0, body: ["force_refresh": true])
        }
        #expect(there.status == 200, "the other replica: \(there.status) \(there["error"] as? String ?? "-")")
        #expect(try await w.idp.stats(client: w.idpClientID).reuseDetected == 0)
    }
}
