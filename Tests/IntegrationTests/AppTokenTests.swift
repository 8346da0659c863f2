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
}
