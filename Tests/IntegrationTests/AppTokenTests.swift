import Foundation
import Testing

@Suite("App tokens: the client-credentials grant, shared by every replica", .serialized)
struct AppTokenTests {
    func ask(_ w: World, replica: Int, _ body: [String: Any]) async throws -> HTTP.Reply {
        let r = try await HTTP.post(w.brokers[replica].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)/token", key: w.workerKey, json: body)
        if let at = r["access_token"] as? String { TestEnv.secret(at) }
        return r
    }

    @Test("3 replicas × 50 concurrent asks: one client-credentials grant at the IdP, one token for all")
    func oneGrantAcrossReplicas() async throws {
        let w = try await World(replicas: 3)
        defer { w.stop() }
        let replies = try await withThrowingTaskGroup(of: HTTP.Reply.self) { g in
            for i in 0..<150 { g.addTask { try await ask(w, replica: i % 3, ["scope": "read write", "min_ttl": 60]) } }
            return try await g.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.filter { $0.status != 200 }.map { $0["error"] as? String ?? "?" }.prefix(3))")
        #expect(Set(replies.compactMap { $0["access_token"] as? String }).count == 1)
        #expect(replies.allSatisfy { $0["client"] as? String == w.client && $0["token_type"] as? String == "Bearer" })
        #expect(replies.first?.headers["cache-control"] == "no-store")
        let counters = try await w.idp.counters(client: w.idpClientID)
        #expect(counters["client_credentials_grants"] as? Int == 1)
        // The same scopes in another order are the same ask: served the stored token.
        let again = try await ask(w, replica: 1, ["scope": "write read"])
        #expect(again.status == 200 && again["access_token"] as? String == replies.first?["access_token"] as? String)
        #expect(try await w.idp.counters(client: w.idpClientID)["client_credentials_grants"] as? Int == 1)
    }

    @Test("min_ttl longer than the IdP's tokens live: 422 saying the most it can get; bad input: 400, nothing asked")
    func refusals() async throws {
        let w = try await World(accessTTL: 30)
        defer { w.stop() }
        let long = try await ask(w, replica: 0, ["min_ttl": 40])
        #expect(long.status == 422 && long["error"] as? String == "min_ttl_too_long")
        let bad = try await ask(w, replica: 0, ["resource": "not a uri"])
        #expect(bad.status == 400 && bad["error"] as? String == "invalid_request")
        let none = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/nobody/token", key: w.workerKey, json: [:])
        #expect(none.status == 404)
        // A disabled client gets none, though one is stored; enabled again, it is served.
        #expect(try await ask(w, replica: 0, ["min_ttl": 5]).status == 200)
        func register(disabled: Bool) async throws {
            try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)", key: w.operatorKey, json: [
                "issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
                "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL], "disabled": disabled]), 200)
        }
        try await register(disabled: true)
        let off = try await ask(w, replica: 0, ["min_ttl": 5])
        #expect(off.status == 409 && off["error"] as? String == "client_disabled" && off["access_token"] == nil)
        try await register(disabled: false)
        #expect(try await ask(w, replica: 0, ["min_ttl": 5]).status == 200)
    }

    /// A counter's value in a broker's /metrics (0 when the series is absent).
    func metric(_ w: World, replica: Int = 0, _ series: String) async throws -> Int {
        let text = try await HTTP.get(w.brokers[replica].url + "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test("a worker asking every 200 ms never waits for a grant after the first: the token is renewed before it expires; an unused one is not")
    func renewedWhileInUse() async throws {
        // 10-s tokens: renewed from 2 s before expiry (the policy's lead), asked for with the default min_ttl of 1 s.
        let w = try await World(replicas: 2, accessTTL: 10)
        defer { w.stop() }
        let unused = try expectStatus(try await ask(w, replica: 1, ["scope": "unused"]), 200)
        var seen: [(token: String, expiresIn: Int, version: Int)] = []
        let start = Date()
        while Date().timeIntervalSince(start) < 13 {
            let r = try expectStatus(try await ask(w, replica: seen.count % 2, ["scope": "read"]), 200)
            seen.append((r["access_token"] as! String, r["expires_in"] as! Int, r["version"] as! Int))
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        #expect(seen.allSatisfy { $0.expiresIn >= 1 }, "a hand-out had less than min_ttl left")
        let tokens = Set(seen.map(\.token)), versions = seen.map(\.version)
        #expect(tokens.count >= 2 && versions == versions.sorted(), "no renewal in 13 s of 10-s tokens, or versions went back")
        // Only the first ask of each token waited for a grant (on any replica); every later one was served the stored token.
        var waited = 0, renewed = 0
        for replica in 0..<2 {
            waited += try await metric(w, replica: replica, "tokenbroker_app_token_handouts_total{source=\"granted\"}")
            renewed += try await metric(w, replica: replica, "tokenbroker_app_token_renewals_total{outcome=\"renewed\"}")
        }
        #expect(waited == 2, "asks waited for a grant: \(waited) (the first of each ask only)")
        let grants = try await w.idp.counters(client: w.idpClientID)["client_credentials_grants"] as? Int
        #expect(renewed >= 1 && grants == 2 + renewed, "grants \(grants ?? -1), renewals \(renewed)")
        #expect((tokens.count - 1...tokens.count).contains(renewed), "a token granted on an ask (renewals \(renewed), tokens \(tokens.count))")
        // The token asked for once was left to expire: never renewed.
        let row = try runPSQL("SELECT version FROM app_tokens WHERE tenant_id = '\(w.tenant)' AND scopes_asked = '{unused}'")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(row == String(unused["version"] as! Int), "the unused token was renewed (version \(row))")
    }

    @Test("a client the IdP no longer accepts: 502 idp_client_rejected and no token stored; a disabled client: 409 and no grant")
    func clientRefused() async throws {
        let w = try await World()
        defer { w.stop() }
        try expectStatus(try await ask(w, replica: 0, ["scope": "read", "min_ttl": 60]), 200)
        func grants() async throws -> Int { try await w.idp.counters(client: w.idpClientID)["client_credentials_grants"] as? Int ?? -1 }
        func stored() throws -> String {
            try runPSQL("SELECT count(*) FROM app_tokens WHERE tenant_id = '\(w.tenant)' AND access_token IS NOT NULL")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try stored() == "1")
        // Disabled at the broker: refused before the IdP is asked, the stored token not handed out.
        func register(disabled: Bool) async throws {
            try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)", key: w.operatorKey, json: [
                "issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
                "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL], "disabled": disabled]), 200)
        }
        try await register(disabled: true)
        let off = try await ask(w, replica: 0, ["scope": "other"])
        #expect(off.status == 409 && off["error"] as? String == "client_disabled" && off["access_token"] == nil)
        #expect(try await grants() == 1)
        try await register(disabled: false)
        // The IdP's client gets another secret (revoked credentials): the broker's grant is refused as the client.
        try await w.idp.registerClient(w.idpClientID, secret: "rotated-" + UUID().uuidString, redirectURI: w.redirectURI)
        let fresh = try await ask(w, replica: 0, ["scope": "other"])
        #expect(fresh.status == 502 && fresh["error"] as? String == "idp_client_rejected" && fresh["access_token"] == nil)
        #expect(try stored() == "0", "a token of the refused client is still stored")
        let held = try await ask(w, replica: 0, ["scope": "read", "min_ttl": 1])
        #expect(held.status == 502 && held["error"] as? String == "idp_client_rejected", "the dropped token was handed out")
    }

    @Test("hand-outs and grants are in the audit trail by key and client; the CLI asks as `cli`")
    func auditedAndCLI() async throws {
        let w = try await World()
        defer { w.stop() }
        let first = try expectStatus(try await ask(w, replica: 0, ["scope": "read", "min_ttl": 60]), 200)
        try expectStatus(try await ask(w, replica: 0, ["scope": "read", "min_ttl": 60]), 200)
        try expectStatus(try await ask(w, replica: 0, ["scope": "read", "min_ttl": 60]), 200)
        let cli = try runCommand("tokenbroker", ["client", "token", "--tenant", w.tenant, "--client", w.client, "--scope", "read",
                                                 "--min-ttl", "60"], env: w.env)
        #expect(cli.status == 0, "\(cli.err)")
        let printed = try JSONSerialization.jsonObject(with: Data(cli.out.utf8)) as? [String: Any]
        if let at = printed?["access_token"] as? String { TestEnv.secret(at) }
        #expect(printed?["access_token"] as? String == first["access_token"] as? String && printed?["client"] as? String == w.client)
        let unknown = try runCommand("tokenbroker", ["client", "token", "--tenant", w.tenant, "--client", "nobody"], env: w.env)
        #expect(unknown.status == 1 && unknown.err.contains("not_found"))
        let r = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?client=\(w.client)", key: w.workerKey), 200)
        // Identical events are one row per flush window: summed over the rows.
        var counts: [String: Int] = [:]
        for e in r["events"] as? [[String: Any]] ?? [] {
            let actor = e["actor"] as? String ?? "", who = actor == "cli" ? "cli" : "key"
            counts["\(e["action"] as? String ?? "") \(e["outcome"] as? String ?? "") \(who)", default: 0] += e["count"] as? Int ?? 0
        }
        #expect(counts == ["app_token.grant granted key": 1, "app_token.issue granted key": 1, "app_token.issue stored key": 2,
                           "app_token.issue stored cli": 1], "\(counts)")
        #expect((r["events"] as? [[String: Any]] ?? []).allSatisfy { $0["client"] as? String == w.client && $0["session_id"] is NSNull })
    }

    @Test("a DPoP-bound client's app token comes with proofs for the worker's requests, as a session token does")
    func dpopProofs() async throws {
        let (w, _) = try await DPoPTests.world()
        defer { w.stop() }
        let target = w.idp.issuer + "/resource"
        let r = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/dpop/token", key: w.workerKey,
                                                     json: ["dpop": [["htm": "GET", "htu": target], ["htm": "POST", "htu": target]]]), 200)
        let token = r["access_token"] as! String
        TestEnv.secret(token)
        let proofs = DPoPTests.proofs(r)
        #expect(r["token_type"] as? String == "DPoP" && proofs.count == 2)
        let ok = try await DPoPTests.resource(w, token: token, proof: proofs[0])
        #expect(ok.status == 200 && ok["bound"] as? Bool == true)
        #expect(try await DPoPTests.resource(w, token: token, proof: nil).status == 401, "a bound token without a proof was accepted")
        let bearer = try await ask(w, replica: 0, ["dpop": ["htm": "GET", "htu": target]])
        #expect(bearer.status == 409 && bearer["error"] as? String == "not_dpop_bound" && bearer["access_token"] == nil)
    }
}
