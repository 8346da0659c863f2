import BrokerCore
import Foundation
import Testing

/// Certificate-bound access tokens (RFC 8705 §3) against the development IdP in mutual-TLS
/// mode, whose access tokens carry `cnf.x5t#S256` and whose protected resource accepts such a
/// token only on a connection presenting that certificate. A worker cannot present it, so a
/// hand-out is refused unless the registration allows it; the outbound proxy presents the
/// client's certificate, and after the certificate is replaced renews the token first (§6.3).
@Suite("Certificate-bound tokens: hand-outs, the proxy, certificate rotation, expiry webhooks", .serialized)
struct CertificateBoundTokenTests {
    typealias Setup = MutualTLSTests.Setup

    @Test("a bound token's hand-out is 409 token_certificate_bound naming the proxy route, alone and in a batch; with hand_out_certificate_bound it is handed out")
    func handOut() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let id = try await s.client("bound", s.a, bySubject: "CN=mtls-a", handOut: false)
        let session = try await s.login(client: "bound", subject: "ada")

        let refused = try await s.w.token(session)
        #expect(refused.status == 409 && refused["error"] as? String == "token_certificate_bound", "\(refused.status) \(refused.json)")
        let message = refused["message"] as? String ?? ""
        #expect(message.contains("/v1/tenants/\(s.w.tenant)/proxy/sessions/\(session)/") && message.contains("hand_out_certificate_bound"), "\(message)")
        #expect(refused["access_token"] == nil)
        // The session shows the mark (never the token).
        let shown = try expectStatus(try await HTTP.get(s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/sessions/\(session)", key: s.w.workerKey), 200)
        #expect(shown["access_token_x5t#S256"] as? String == s.a.x5t, "\(shown.json)")
        // A forced refresh is refused the same, before any refresh token reaches the IdP.
        try expectStatus(try await s.w.token(session, body: ["min_ttl": 60, "force_refresh": true]), 409)
        #expect(try await s.provider.counters(client: id)["refresh_presentations"] as? Int == 0)

        let batch = try expectStatus(try await HTTP.post(s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/tokens:batch", key: s.w.workerKey,
                                                         json: ["min_ttl": 60, "items": [["session_id": session], ["session_id": "ses_missing"]]]), 200)
        let items = batch["results"] as? [[String: Any]] ?? []
        #expect(items.map { $0["status"] as? Int } == [409, 404] && items.first?["error"] as? String == "token_certificate_bound", "\(items)")
        #expect(items.first?["access_token"] == nil)

        // The registration says its workers hold the same certificate (here through the CLI, the
        // stored certificate kept): handed out, bound to it.
        let cli = try runCommand("tokenbroker", ["client", "put", "--tenant", s.w.tenant, "--id", "bound", "--issuer", s.provider.issuer,
                                                 "--client-id", id, "--auth-method", "tls_client_auth", "--redirect-uri", s.w.redirectURI,
                                                 "--scopes", "openid offline_access", "--hand-out-certificate-bound"], env: s.w.env)
        #expect(cli.status == 0, "\(cli.err)")
        let view = try expectStatus(try await HTTP.get(s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/clients/bound", key: s.w.operatorKey), 200)
        #expect(view["hand_out_certificate_bound"] as? Bool == true)
        var handed = try await s.w.token(session)
        for _ in 0..<20 where handed.status == 409 {   // the change notice reaching the replica
            try await Task.sleep(for: .milliseconds(100))
            handed = try await s.w.token(session)
        }
        let given = try expectStatus(handed, 200)
        let cnf = MutualTLSTests.claims(given["access_token"] as? String ?? "")["cnf"] as? [String: Any]
        #expect(cnf?["x5t#S256"] as? String == s.a.x5t)

        // Only for clients that present a certificate.
        let other = try await HTTP.put(s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/clients/plain", key: s.w.operatorKey, json: [
            "issuer": s.provider.issuer, "client_id": "x", "auth_method": "client_secret_basic", "client_secret": "s-" + UUID().uuidString,
            "redirect_uri": s.w.redirectURI, "scopes": ["openid"], "hand_out_certificate_bound": true])
        #expect(other.status == 400 && (other["message"] as? String)?.contains("hand_out_certificate_bound") == true, "\(other.json)")
    }

    @Test("the proxy presents the client certificate: the resource takes the bound token; after the certificate is replaced, the next proxied call renews the token with the new one first, on each replica")
    func proxyAndRotation() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        s.w.brokers.append(try await BrokerServer(env: s.w.env, name: "broker-b"))
        let id = try await s.client("bound", s.a, bySubject: "CN=mtls-a", handOut: false, upstream: true)
        let session = try await s.login(client: "bound", subject: "ada")
        let key = try await s.w.newKey(roles: ["proxy"], tenants: [s.w.tenant])
        func call(_ replica: Int) async throws -> HTTP.Reply {
            try await HTTP.request("GET", s.w.brokers[replica].url + "/v1/tenants/\(s.w.tenant)/proxy/sessions/\(session)/", key: key)
        }

        for replica in 0..<2 {
            let r = try expectStatus(try await call(replica), 200)
            #expect(r["sub"] as? String == "ada" && r["client_id"] as? String == id)
        }
        var c = try await s.provider.counters(client: id)
        #expect(c["resource_certificate_bound"] as? Int == 2 && c["resource_refusals"] as? Int == 0, "\(c)")
        #expect((c["token_calls"] as? [String: Int])?["refresh_token"] == nil, "the proxy refreshed a good token")

        // A new certificate of the same subject (the IdP knows the client by it): every replica
        // uses it at once; the token bound to the old one is renewed with it before the call.
        let renewed = try MutualTLSTests.credential(s.clientPKI, "mtls-a")
        #expect(renewed.x5t != s.a.x5t)
        try expectStatus(try await s.put("bound", s.registration(id, renewed, handOut: false, upstream: true)), 200)
        try await Task.sleep(for: .milliseconds(300))   // the change notice reaching replica b
        for replica in [1, 0, 1] {
            let r = try await call(replica)
            #expect(r.status == 200, "replica \(replica): \(r.status) \(r.text)")
        }
        c = try await s.provider.counters(client: id)
        // One renewal, single-flight across the replicas; no call refused by the resource.
        #expect((c["token_calls"] as? [String: Int])?["refresh_token"] == 1, "\(c["token_calls"] ?? "?")")
        #expect(c["resource_certificate_bound"] as? Int == 5 && c["resource_refusals"] as? Int == 0, "\(c)")
        #expect(c["client_certificates_seen"] as? [String] == [s.a.sha256Hex, renewed.sha256Hex].sorted(), "\(c)")
        let row = try runPSQL("SELECT access_token_x5t FROM sessions WHERE tenant_id = '\(s.w.tenant)' AND id = '\(session)'")
        #expect(row.trimmingCharacters(in: .whitespacesAndNewlines) == renewed.x5t, "\(row)")
    }

    @Test("a proxied call whose refresh brings the first bound token of a session held unbound in memory uses it; the worker is refused it after")
    func boundByRefresh() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let id = try await s.client("bound", s.a, bySubject: "CN=mtls-a", handOut: false, upstream: true)
        // A grant imported with an opaque access token living 20 s: not bound, handed out, and so held in memory.
        let refresh = try #require(try await s.provider.grants(client: id, subjects: ["imp"])["imp"])
        TestEnv.secret(refresh)
        let imported = try expectStatus(try await HTTP.post(s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/sessions:import", key: s.w.workerKey, json: [
            "client": "bound", "subject": "imp", "refresh_token": refresh, "access_token": "opaque-" + UUID().uuidString,
            "expires_at": ISO8601DateFormatter().string(from: Date().addingTimeInterval(20))]), 201)
        let session = try #require(imported["session_id"] as? String)
        try expectStatus(try await s.w.token(session, body: ["min_ttl": 5]), 200)
        // The proxy needs more life (the policy's 60 s): refreshed, now bound, and presented with the certificate.
        let key = try await s.w.newKey(roles: ["proxy"], tenants: [s.w.tenant])
        let r = try await HTTP.request("GET", s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/proxy/sessions/\(session)/", key: key)
        #expect(r.status == 200 && r["sub"] as? String == "imp", "\(r.status) \(r.text)")
        try expectStatus(try await s.w.token(session, body: ["min_ttl": 5]), 409)
    }

    @Test("an mTLS client's app token bound to its certificate: refused to a worker, used by the proxy presenting the certificate, granted anew after the certificate is replaced")
    func appToken() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let id = try await s.client("bound", s.a, bySubject: "CN=mtls-a", handOut: false, upstream: true)
        let base = s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)"
        let refused = try await HTTP.post(base + "/clients/bound/token", key: s.w.workerKey, json: [:])
        #expect(refused.status == 409 && refused["error"] as? String == "token_certificate_bound", "\(refused.status) \(refused.json)")
        #expect((refused["message"] as? String)?.contains("/proxy/clients/bound/app/") == true && refused["access_token"] == nil)

        let key = try await s.w.newKey(roles: ["proxy"], tenants: [s.w.tenant])
        let first = try expectStatus(try await HTTP.request("GET", base + "/proxy/clients/bound/app/", key: key), 200)
        #expect(first["client_id"] as? String == id)
        let renewed = try MutualTLSTests.credential(s.clientPKI, "mtls-a")
        try expectStatus(try await s.put("bound", s.registration(id, renewed, handOut: false, upstream: true)), 200)
        try expectStatus(try await HTTP.request("GET", base + "/proxy/clients/bound/app/", key: key), 200)
        try expectStatus(try await HTTP.request("GET", base + "/proxy/clients/bound/app/", key: key), 200)
        let c = try await s.provider.counters(client: id)
        // The refused hand-out's grant, then one grant with the new certificate; no call refused upstream.
        #expect(c["client_credentials_grants"] as? Int == 2, "\(c["client_credentials_grants"] ?? "?")")
        #expect(c["resource_certificate_bound"] as? Int == 3 && c["resource_refusals"] as? Int == 0, "\(c)")
    }

    @Test("a client certificate near its end is announced once by client.certificate_expiring, whichever of two replicas scans")
    func expiringWebhook() async throws {
        let w = try await World(replicas: 2, extraEnv: ["TOKENBROKER_WEBHOOK_ALLOW_HTTP": "true", "TOKENBROKER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"])
        defer { w.stop() }
        let base = w.brokers[0].url + "/v1/tenants/\(w.tenant)"
        let receiver = TestEnv.uniqueName("certs")
        try expectStatus(try await HTTP.post(base + "/webhooks", key: w.operatorKey,
                                             json: ["url": w.idp.issuer + "/receiver/\(receiver)", "events": ["client.certificate_expiring"]]), 201)
        // TestCA's certificates live two days: inside the 7-day threshold.
        let c = try MutualTLSTests.credential(try TestCA(name: "expiring-pki"), "soon")
        let registered = Date()
        try expectStatus(try await HTTP.put(base + "/clients/soon?verify=false", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": "soon", "auth_method": "self_signed_tls_client_auth", "redirect_uri": w.redirectURI,
            "scopes": ["openid"]].merging(c.pem) { $1 }), 201)
        func received() async throws -> [[String: Any]] {
            try await HTTP.get(w.idp.issuer + "/receiver/\(receiver)")["received"] as? [[String: Any]] ?? []
        }
        var got = try await received()
        while got.isEmpty, Date().timeIntervalSince(registered) < 20 {
            try await Task.sleep(for: .milliseconds(200))
            got = try await received()
        }
        // Both replicas' passes (every 15 s) have run since: still one event.
        let wait = 16.5 - Date().timeIntervalSince(registered)
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        got = try await received()
        #expect(got.count == 1, "\(got.count) events")
        let body = (got.first?["body"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        let data = body["data"] as? [String: String] ?? [:]
        #expect(body["type"] as? String == "client.certificate_expiring", "\(body)")
        #expect(data["client"] == "soon" && data["x5t#S256"] == c.x5t && data["days"] == "7" && data["subject"] == "CN=soon", "\(data)")
        #expect(data["not_after"]?.isEmpty == false && data["tenant"] == w.tenant)
    }
}
