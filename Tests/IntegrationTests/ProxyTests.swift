import Foundation
import Testing

/// The outbound proxy end to end: workers send API calls through the broker, which adds the
/// session's (or the client's) credentials and forwards them to the client's upstream — here
/// the development IdP's protected resource, which behaves like a real API (RFC 6750
/// challenges, dead tokens, rate limits, redirects, large streamed bodies, DPoP with nonces).
@Suite("The outbound proxy: credentials added, refresh on invalid_token, rate limits, refusals, streaming", .serialized)
struct ProxyTests {
    /// Points `client`'s upstream at the development IdP's resource (loopback and http allowed).
    static func upstream(_ w: World, client: String = "app", idpClient: String? = nil, dpop: Bool = false,
                         upstream: [String: Any]? = nil) async throws {
        var body: [String: Any] = ["issuer": w.idp.issuer, "client_id": idpClient ?? w.idpClientID, "auth_method": "client_secret_basic",
                                   "client_secret": w.idpSecret, "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"],
                                   "redirect_after_allowed": [w.appURL],
                                   "upstream": upstream ?? ["base_url": w.idp.issuer + "/resource", "allow_private_addresses": true]]
        if dpop { body["dpop"] = true }
        let r = try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(client)", key: w.operatorKey, json: body)
        #expect([200, 201].contains(r.status), "\(r.text)")
    }

    /// A proxied call for session `s`: `tail` under the upstream's base.
    static func call(_ w: World, _ s: String, _ tail: String, method: String = "GET", key: String, replica: Int = 0,
                     body: Data? = nil, headers: [String: String] = [:]) async throws -> HTTP.Reply {
        try await HTTP.request(method, w.brokers[replica].url + "/v1/tenants/\(w.tenant)/proxy/sessions/\(s)/\(tail)", key: key,
                               body: body, headers: headers)
    }

    @Test("a GET and a POST reach the resource with the session's token; the caller's key, Host and hop-by-hop headers are not forwarded; the token is in no answer and no log")
    func getAndPost() async throws {
        let w = try await World()
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "pia"), 200)["session_id"] as! String
        let who = try expectStatus(try await Self.call(w, s, "", key: key), 200)
        #expect(who["sub"] as? String == "pia" && who["bound"] as? Bool == false)
        let echo = try expectStatus(try await Self.call(w, s, "echo?x=1&y=%2Fz", method: "POST", key: key, body: Data("hello proxy".utf8),
                                                        headers: ["Content-Type": "text/plain", "X-Trace": "t1", "Connection": "X-Secret",
                                                                  "X-Secret": "no", "Tokenbroker-Subject": "x"]), 200)
        #expect(echo["method"] as? String == "POST" && echo["path"] as? String == "/resource/echo" && echo["query"] as? String == "x=1&y=%2Fz")
        #expect(echo["body_bytes"] as? Int == 11 && echo["sub"] as? String == "pia")
        let headers = (echo["headers"] as? [[String]] ?? []).map { ($0[0], $0[1]) }
        func sent(_ n: String) -> [String] { headers.filter { $0.0 == n }.map(\.1) }
        #expect(sent("x-trace") == ["t1"] && sent("content-type") == ["text/plain"])
        #expect(sent("x-secret").isEmpty && sent("tokenbroker-subject").isEmpty, "\(headers)")
        #expect(sent("host").first?.hasPrefix("127.0.0.1:") == true, "the upstream's own Host")
        let authorization = try #require(sent("authorization").first)
        #expect(sent("authorization").count == 1 && authorization.hasPrefix("Bearer ") && !authorization.contains(key))
        let token = String(authorization.dropFirst("Bearer ".count))
        TestEnv.secret(token)
        #expect(!who.text.contains(token) && !who.headers.values.contains { $0.contains(token) })
        let counts = try await w.idp.counters(client: w.idpClientID)
        #expect(counts["resource_accepted"] as? Int == 2)
        // A key without the proxy role cannot use it; a proxy-only key gets no token.
        try expectStatus(try await Self.call(w, s, "", key: w.workerKey), 403)
        try expectStatus(try await w.token(s, key: key), 403)
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/app/token", key: key, json: [:]), 403)
        // Audited as proxy calls of the key, never as hand-outs to it.
        let audit = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?session=\(s)", key: w.workerKey), 200)
        let events = audit["events"] as? [[String: Any]] ?? []
        #expect(events.contains { $0["action"] as? String == "proxy.call" && $0["outcome"] as? String == "2xx" && ($0["count"] as? Int ?? 0) >= 1 },
                "\(audit.text)")
        let keyID = key.split(separator: "_")[1]
        #expect(!events.contains { $0["action"] as? String == "token.issue" && ($0["actor"] as? String ?? "").contains(keyID) })
        w.stop()
        #expect(!w.brokers[0].process.output.contains(token), "the token is in the broker's log")
    }

    @Test("the upstream kills the token: 3 replicas, 20 concurrent proxied calls → one refresh at the IdP, each call retried once, all 200")
    func refreshOnInvalidToken() async throws {
        let w = try await World(replicas: 3)
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "kim"), 200)["session_id"] as! String
        for replica in 0..<3 { try expectStatus(try await Self.call(w, s, "", key: key, replica: replica), 200) }
        try await w.idp.resourceKill(client: w.idpClientID)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { g in
            for i in 0..<20 { g.addTask { try await Self.call(w, s, "", key: key, replica: i % 3).status } }
            return try await g.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20), "\(statuses)")
        let c = try await w.idp.counters(client: w.idpClientID)
        #expect(c["refreshes_ok"] as? Int == 1 && c["reuse_detected"] as? Int == 0, "\(c)")
        let refused = c["resource_refusals"] as? Int ?? 0
        #expect((1...20).contains(refused), "every call retried at most once: \(refused) refusals")
    }

    @Test("a bare 401 (no error in its challenge) is passed on as it is, unless the client says it means a dead token: then one refresh and a retry")
    func plain401() async throws {
        let w = try await World()
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "pat"), 200)["session_id"] as! String
        _ = try await w.idp.resourceSettings(plain401: true)
        try await w.idp.resourceKill(client: w.idpClientID)
        let bare = try await Self.call(w, s, "", key: key)
        #expect(bare.status == 401 && bare.headers["tokenbroker-token-refreshed"] == nil, "a bare 401 is passed on as it is")
        #expect(try await w.idp.counters(client: w.idpClientID)["refreshes_ok"] as? Int == 0)
        try await Self.upstream(w, upstream: ["base_url": w.idp.issuer + "/resource", "allow_private_addresses": true, "plain_401_invalid_token": true])
        let retried = try await Self.call(w, s, "", key: key)
        #expect(retried.status == 200, "\(retried.status) \(retried.text)")
        #expect(try await w.idp.counters(client: w.idpClientID)["refreshes_ok"] as? Int == 1)
    }

    @Test("429 Retry-After: 2 → passed on; the next call within 2 s is 429 without reaching the upstream; the one after reaches it")
    func rateLimited() async throws {
        let w = try await World()
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "rai"), 200)["session_id"] as! String
        try await w.idp.resourceFault(status: 429, retryAfter: .seconds(2), count: 1)
        let first = try await Self.call(w, s, "", key: key)
        #expect(first.status == 429 && first.headers["retry-after"] == "2")
        let before = try await w.idp.counters(client: w.idpClientID)
        let second = try await Self.call(w, s, "", key: key)
        #expect(second.status == 429 && second["error"] as? String == "upstream_rate_limited", "\(second.text)")
        #expect(["1", "2"].contains(second.headers["retry-after"] ?? ""))
        let after = try await w.idp.counters(client: w.idpClientID)
        #expect(after["resource_accepted"] as? Int == before["resource_accepted"] as? Int
                && after["resource_rate_limited"] as? Int == before["resource_rate_limited"] as? Int, "the upstream was called")
        try await Task.sleep(for: .milliseconds(2_100))
        try expectStatus(try await Self.call(w, s, "", key: key), 200)
    }

    @Test("a redirect to another host is refused and nothing is sent there; an upstream at a loopback or metadata address is refused unless the client allows it")
    func refusedDestinations() async throws {
        let w = try await World()
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "rex"), 200)["session_id"] as! String
        let away = try await Self.call(w, s, "redirect?to=http%3A%2F%2Felsewhere.localhost%3A9%2Fsteal", key: key)
        #expect(away.status == 502 && away["error"] as? String == "upstream_redirect_refused", "\(away.text)")
        let here = try await Self.call(w, s, "redirect?to=%2Fresource%2Fecho", key: key)
        #expect(here.status == 200 && here["path"] as? String == "/resource/echo", "a same-origin redirect is followed")
        for base in ["https://127.0.0.1:9/api", "https://localhost:9/api", "https://169.254.169.254/latest/meta-data", "https://10.1.2.3/api"] {
            try await Self.upstream(w, upstream: ["base_url": base])
            let r = try await Self.call(w, s, "x", key: key)
            #expect(r.status == 502 && r["error"] as? String == "upstream_address_refused", "\(base): \(r.text)")
        }
        try await Self.upstream(w, upstream: ["base_url": w.idp.issuer + "/resource"])
        let plain = try await Self.call(w, s, "", key: key)
        #expect(plain.status == 409 && plain["error"] as? String == "no_upstream", "http:// only where private addresses are allowed: \(plain.text)")
        let bad = try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/app", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "redirect_uri": w.redirectURI,
            "scopes": ["openid"], "upstream": ["base_url": "https://api.example/v1?x=1"]])
        #expect(bad.status == 400 && (bad["message"] as? String ?? "").contains("upstream.base_url"), "\(bad.text)")
    }

    @Test("a DPoP session's proxied calls carry a fresh proof each, bound to the method and URL; the resource's nonce is answered with one retry")
    func dpopProofs() async throws {
        let (w, idpClient) = try await DPoPTests.world()
        defer { w.stop() }
        try await Self.upstream(w, client: "dpop", idpClient: idpClient, dpop: true)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "dot", client: "dpop"), 200)["session_id"] as! String
        for method in ["GET", "POST", "GET"] {
            let r = try await Self.call(w, s, "echo", method: method, key: key, body: method == "POST" ? Data("{}".utf8) : nil)
            #expect(r.status == 200 && r["method"] as? String == method, "\(r.text)")
        }
        try await w.idp.settings(resourceNonce: true)
        try expectStatus(try await Self.call(w, s, "", key: key), 200)
        try expectStatus(try await Self.call(w, s, "", key: key), 200)
        let c = try await w.idp.counters(client: idpClient)
        #expect(c["resource_accepted"] as? Int == 5, "\(c)")
        let reasons = c["resource_refusals_by_reason"] as? [String: Int] ?? [:]
        #expect(reasons["use_dpop_nonce"] == 1 && reasons["invalid_dpop_proof"] == nil, "one nonce challenge, answered; then the nonce is kept: \(reasons)")
    }

    @Test("a slow upstream holds only proxy threads: with 24 proxied calls waiting 2 s on it, a token is handed out at once")
    func slowUpstream() async throws {
        let w = try await World()
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "slo"), 200)["session_id"] as! String
        try expectStatus(try await w.token(s), 200)
        _ = try await w.idp.resourceSettings(delayMS: 2_000)
        let calls = Task {
            try await withThrowingTaskGroup(of: Int.self) { g in
                for _ in 0..<24 { g.addTask { try await Self.call(w, s, "", key: key).status } }
                return try await g.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        try await Task.sleep(for: .milliseconds(300))   // the calls are in, each holding a proxy thread
        let started = Date()
        try expectStatus(try await w.token(s), 200)
        let waited = Date().timeIntervalSince(started)
        #expect(waited < 0.5, "a token took \(waited) s while the upstream was slow")
        let statuses = try await calls.value
        #expect(statuses == Array(repeating: 200, count: 24), "\(statuses)")
    }

    @Test("a 200 MB download streams through the broker, its RSS growing by less than 16 MB; an upload streams too")
    func streaming() async throws {
        let w = try await World()
        defer { w.stop() }
        try await Self.upstream(w)
        let key = try await w.newKey(roles: ["proxy"], tenants: [w.tenant])
        let s = try expectStatus(try await w.login(subject: "sid"), 200)["session_id"] as! String
        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/proxy/sessions/\(s)/"
        try expectStatus(try await HTTP.request("GET", url + "bytes?n=1000", key: key), 200)
        let n = 200 << 20
        let before = w.brokers[0].residentBytes()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-sS", "--max-time", "120", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-H", "Authorization: Bearer \(key)",
                       url + "bytes?n=\(n)"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        var peak = before
        while p.isRunning {
            peak = max(peak, w.brokers[0].residentBytes())
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "200 \(n)")
        #expect(peak - before < 16 << 20, "the broker's RSS grew by \(peak - before) bytes")
        let body = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let up = try expectStatus(try await HTTP.request("POST", url + "upload", key: key, body: body), 200)
        #expect(up["bytes"] as? Int == 3 << 20)
    }
}
