import Foundation
import Testing

/// DPoP nonces at the authorization server (RFC 9449 §8) as glewlwyd keeps them: one per client,
/// shared by its token, PAR and userinfo endpoints, its PAR refusing a proof without it with 403
/// `invalid_dpop_proof` and no `DPoP-Nonce`. The broker holds one nonce per client for every
/// endpoint and every replica, and reports a refusal as the server said it.
@Suite("DPoP nonces shared by endpoints and replicas (glewlwyd's way)", .serialized)
struct DPoPNonceTests {
    /// A whole login of the `dpop` client started and completed at `replica`.
    static func login(_ w: World, subject: String, replica: Int) async throws -> HTTP.Reply {
        let started = try expectStatus(try await HTTP.post(w.brokers[replica].url + "/v1/tenants/\(w.tenant)/logins", key: w.workerKey,
                                                           json: ["client": "dpop", "login_hint": subject]), 201)
        let back = try await w.authorize(started["authorization_url"] as! String)
        return try await w.callback(back.replacingOccurrences(of: w.brokers[0].url, with: w.brokers[replica].url))
    }

    static func refusals(_ w: World, _ idpClient: String) async throws -> Int {
        try await w.idp.counters(client: idpClient)["dpop_refusals"] as? Int ?? -1
    }

    @Test("with no nonce known, PAR's refusal is reported as the IdP said it; once a refresh learned one, a replica just started logs in with it at once")
    func loginOnANewReplica() async throws {
        let (w, idpClient) = try await DPoPTests.world()
        defer { w.stop() }
        try await w.idp.settings(par: "required", glewlwydNonce: true)
        let refused = try await w.startLogin(subject: "gia", client: "dpop")
        let message = refused["message"] as? String ?? ""
        #expect(refused.status == 422 && message.contains("invalid_dpop_proof") && message.contains("HTTP 403")
                    && message.contains("the pushed authorization request endpoint") && message.contains("without a nonce")
                    && message.contains("pushed again with dpop_jkt and no proof") && !message.contains("dpop_alg"), "\(refused.status) \(message)")
        #expect(try await Self.refusals(w, idpClient) == 1, "a refusal without a new nonce was sent again")

        try await w.idp.settings(glewlwydNonce: false)
        let s = try expectStatus(try await Self.login(w, subject: "gil", replica: 0), 200)["session_id"] as! String
        try await w.idp.settings(glewlwydNonce: true)
        try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)   // use_dpop_nonce, learned, sent again
        #expect(try await Self.refusals(w, idpClient) == 2)

        w.brokers.append(try await BrokerServer(env: w.env, name: "broker-new"))
        try expectStatus(try await Self.login(w, subject: "gus", replica: 1), 200)
        #expect(try await Self.refusals(w, idpClient) == 2, "the new replica did not use the nonce the other one learned")
    }

    @Test("with no nonce known, a client the IdP does not hold to DPoP logs in: its push goes again with dpop_jkt alone, the code exchange learns the nonce")
    func firstLoginWithoutAProofOnThePush() async throws {
        let w = try await World()
        defer { w.stop() }
        let idpClient = TestEnv.uniqueName("dpop-client")
        try await w.idp.registerClient(idpClient, secret: w.idpSecret, redirectURI: w.redirectURI)
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/dpop", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": idpClient, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "dpop": true]), 201)
        try await w.idp.settings(par: "required", glewlwydNonce: true)
        let s = try expectStatus(try await Self.login(w, subject: "fia", replica: 0), 200)["session_id"] as! String
        // The push with a proof was refused once for the nonce (the second push's answer carries
        // it here, so the code exchange has it at once; glewlwyd's refuses it once more).
        let n = try await Self.refusals(w, idpClient)
        #expect((1...2).contains(n), "refused proofs: \(n)")
        let t = try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)
        #expect(t["token_type"] as? String == "DPoP")
        #expect(try await Self.refusals(w, idpClient) == n, "the refresh did not carry the nonce the login learned")
    }

    @Test("12 refreshes over two replicas while the IdP changes its nonce: one refused proof per change for the fleet; logins on each replica, a revocation")
    func refreshesAcrossReplicas() async throws {
        let (w, idpClient) = try await DPoPTests.world(replicas: 2)
        defer { w.stop() }
        try await w.idp.settings(par: "required")
        let s = try expectStatus(try await Self.login(w, subject: "ria", replica: 0), 200)["session_id"] as! String
        try await w.idp.settings(glewlwydNonce: true)
        var changes = 1                                           // the client's first nonce
        for i in 0..<12 {
            if i > 0, i % 3 == 0 {
                try await w.idp.rotateDPoPNonce(client: idpClient)
                changes += 1
            }
            try expectStatus(try await w.token(s, replica: i % 2, body: ["force_refresh": true]), 200)
            // The replica that refreshed (and learned a new nonce) announced it; the notices take
            // milliseconds. Without the wait the other replica's forced refresh may be served the
            // token just refreshed instead, which is right but calls no IdP.
            try await Task.sleep(for: .milliseconds(250))
        }
        let st = try await w.idp.counters(client: idpClient)
        let refused = st["dpop_refusals"] as? Int ?? -1
        #expect((1...changes).contains(refused), "refused proofs \(refused) for \(changes) nonces: at most one per nonce, fleet-wide")
        #expect(st["refresh_presentations"] as? Int == st["refreshes_ok"] as? Int && st["reuse_detected"] as? Int == 0,
                "each refresh token was accepted once: \(st["refresh_presentations"] ?? "-") \(st["refreshes_ok"] ?? "-") \(st["reuse_detected"] ?? "-")")

        // PAR takes the nonce the token endpoint gave, on either replica.
        var sessions: [String] = []
        for replica in 0..<2 {
            sessions.append(try expectStatus(try await Self.login(w, subject: "rio\(replica)", replica: replica), 200)["session_id"] as! String)
        }
        #expect(try await Self.refusals(w, idpClient) == refused, "a login was refused a proof")

        // The revocation endpoint's answer carries the new nonce: the other replica's next proof has it.
        try await w.idp.rotateDPoPNonce(client: idpClient)
        let revoked = try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(s)", key: w.workerKey), 200)
        #expect(revoked["idp_revocation"] as? String == "confirmed")
        try await Task.sleep(for: .milliseconds(300))
        try expectStatus(try await w.token(sessions[0], replica: 1, body: ["force_refresh": true]), 200)
        #expect(try await Self.refusals(w, idpClient) == refused, "the nonce the revocation endpoint sent was not used")
        #expect(try runPSQL("SELECT learned_from FROM dpop_nonces WHERE tenant_id = '\(w.tenant)' AND client_id = 'dpop'")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "revocation")
    }
}
