import Foundation
import Testing

/// Many providers over HTTPS: one development IdP playing 100 issuers (`i0.idp.localhost` …),
/// its certificate from a test CA the broker trusts through TOKENBROKER_PROVIDER_CA_FILE. What
/// the provider counts of its connections is what a provider operator would see.
@Suite("Many issuers over HTTPS", .serialized)
struct ManyIssuersTests {
    static let issuers = 100, sessionsPerIssuer = 2
    /// Idle provider connections are dropped after this many seconds: the pause between the two
    /// rounds outlasts it, so the second round reconnects — and may resume its TLS sessions.
    static let keepAlive = 1

    /// The IdP's connection counts and its reuse detections, all clients together.
    struct Counts {
        let opened, full, resumed, refreshesOK, reuse: Int
        static func - (a: Counts, b: Counts) -> Counts {
            Counts(opened: a.opened - b.opened, full: a.full - b.full, resumed: a.resumed - b.resumed,
                   refreshesOK: a.refreshesOK - b.refreshesOK, reuse: a.reuse - b.reuse)
        }
    }

    func counts(_ idp: DevIdPServer) async throws -> Counts {
        let s = try await idp.call("GET", idp.issuer + "/stats").json
        func n(_ k: String) -> Int { s[k] as? Int ?? -1 }
        return Counts(opened: n("connections_opened"), full: n("tls_handshakes_full"), resumed: n("tls_handshakes_resumed"),
                      refreshesOK: n("refreshes_ok"), reuse: n("reuse_detected"))
    }

    /// Runs `work` for every issuer index, `width` issuers at a time (one issuer's work is
    /// sequential); the results by issuer index.
    func perIssuer<T: Sendable>(width: Int = 8, _ work: @escaping @Sendable (Int) async throws -> T) async throws -> [Int: T] {
        try await withThrowingTaskGroup(of: (Int, T).self) { g in
            var out: [Int: T] = [:]
            for i in 0..<Self.issuers {
                if i >= width, let (k, r) = try await g.next() { out[k] = r }
                g.addTask { (i, try await work(i)) }
            }
            for try await (k, r) in g { out[k] = r }
            return out
        }
    }

    @Test("200 sessions over 100 HTTPS issuers, each refreshed twice through one broker: no refresh token presented twice, at most one new connection per issuer and round, and the second round resumes its TLS sessions")
    func manyIssuersOverHTTPS() async throws {
        let clock = ContinuousClock(), started = clock.now
        let idp = try await DevIdPServer(tls: TestCA(name: "provider-ca"), issuerHosts: "idp.localhost")
        let w = try await World(extraEnv: ["TOKENBROKER_PROVIDER_KEEPALIVE_SECONDS": String(Self.keepAlive)], idp: idp)
        defer { w.stop() }
        let b = w.brokers[0].url, tenant = w.tenant, secret = w.idpSecret, redirect = w.redirectURI, op = w.operatorKey

        // One IdP client per issuer host, registered with the broker (which fetches its discovery
        // over HTTPS then), and two grants each: subject → refresh token.
        let grants = try await perIssuer { i -> [String: String] in
            let client = "\(w.idpClientID)-\(i)"
            try await idp.registerClient(client, secret: secret, redirectURI: redirect, accessTTL: 3600)
            try await expectStatus(HTTP.put(b + "/v1/tenants/\(tenant)/clients/c\(i)", key: op, json: [
                "issuer": idp.issuer(host: "i\(i)"), "client_id": client, "auth_method": "client_secret_basic", "client_secret": secret,
                "redirect_uri": redirect, "scopes": ["openid", "offline_access"]]), 201)
            return try await idp.grants(client: client, subjects: (0..<Self.sessionsPerIssuer).map { "u\(i)-\($0)" })
        }
        #expect(grants.values.map(\.count).reduce(0, +) == Self.issuers * Self.sessionsPerIssuer)
        let before = try await counts(idp)

        // Round 1: each grant imported without an access token, which the broker refreshes at once.
        let sessions = try await perIssuer { i -> [String] in
            var ids: [String] = []
            for (subject, refresh) in (grants[i] ?? [:]).sorted(by: { $0.key < $1.key }) {
                let r = try await HTTP.post(b + "/v1/tenants/\(tenant)/sessions:import", key: w.workerKey,
                                            json: ["client": "c\(i)", "subject": subject, "refresh_token": refresh])
                try expectStatus(r, 201)
                ids.append(r["session_id"] as! String)
            }
            return ids
        }
        let first = try await counts(idp) - before

        // Round 2, once every idle connection has been dropped: a forced refresh of each session.
        try await Task.sleep(for: .milliseconds(Self.keepAlive * 1000 + 500))
        let middle = try await counts(idp)
        _ = try await perIssuer { i in
            for id in sessions[i] ?? [] { try expectStatus(try await w.token(id, body: ["force_refresh": true]), 200) }
        }
        let second = try await counts(idp) - middle

        let refreshes = Self.issuers * Self.sessionsPerIssuer
        #expect(first.refreshesOK == refreshes && second.refreshesOK == refreshes, "refreshes: \(first.refreshesOK), \(second.refreshesOK)")
        #expect(first.reuse == 0 && second.reuse == 0, "a refresh token was presented twice")
        // A pool per issuer host: an issuer's second refresh of a round takes the connection its
        // first one left (a test control or two may add a connection of their own).
        #expect(first.opened <= Self.issuers + 5 && second.opened <= Self.issuers + 5,
                "new connections per round: \(first.opened), \(second.opened) for \(refreshes) refreshes over \(Self.issuers) issuers")
        // The second round reconnects to hosts it has talked to: it resumes those sessions.
        #expect(second.resumed >= second.opened * 9 / 10 && second.resumed > 0,
                "second round: \(second.resumed) resumed and \(second.full) full handshakes over \(second.opened) connections")
        #expect(clock.now - started < .seconds(60), "took \(clock.now - started)")
    }

    @Test("an issuer whose certificate comes from a CA the broker does not trust is refused at registration, and no client is stored")
    func untrustedProviderRefused() async throws {
        let w = try await World(idp: try await DevIdPServer(tls: TestCA(name: "provider-ca"), issuerHosts: "idp.localhost"))
        defer { w.stop() }
        let stranger = try await DevIdPServer(tls: TestCA(name: "unrelated-ca"), issuerHosts: "idp.localhost")
        defer { stranger.process.stop() }
        try await stranger.registerClient("other", secret: w.idpSecret, redirectURI: w.redirectURI)
        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/other"
        let r = try await HTTP.put(url, key: w.operatorKey, json: [
            "issuer": stranger.issuer(host: "acme"), "client_id": "other", "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]])
        #expect(r.status != 201 && r.status != 200, "registered at an issuer of an untrusted CA: \(r.status)")
        #expect(try await HTTP.get(url, key: w.operatorKey).status == 404)
        // The same issuer host under the trusted CA's IdP is accepted: the refusal was the certificate's.
        try await w.idp.registerClient("other", secret: w.idpSecret, redirectURI: w.redirectURI)
        try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: [
            "issuer": w.idp.issuer(host: "acme"), "client_id": "other", "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]), 201)
    }

    @Test("the issuer is the request's host: one label before the suffix, in lower case, with its port; any other host is the default issuer")
    func issuerByHost() async throws {
        let idp = try await DevIdPServer(tls: TestCA(name: "provider-ca"), issuerHosts: "idp.localhost")
        defer { idp.process.stop() }
        func issuer(host: String) async throws -> String? {
            try await idp.call("GET", idp.issuer + "/.well-known/openid-configuration", headers: ["Host": host])["issuer"] as? String
        }
        let port = idp.port
        #expect(try await issuer(host: "acme.idp.localhost:\(port)") == "https://acme.idp.localhost:\(port)")
        #expect(try await issuer(host: "ACME.Idp.LocalHost:\(port)") == "https://acme.idp.localhost:\(port)")
        #expect(try await issuer(host: "acme.idp.localhost") == "https://acme.idp.localhost")
        for other in ["a.b.idp.localhost:\(port)", "idp.localhost:\(port)", "-a.idp.localhost:\(port)", "a_b.idp.localhost:\(port)",
                      "acme.idp.localhost:x", "acme.idp.localhost.evil:\(port)"] {
            #expect(try await issuer(host: other) == idp.issuer, "\(other)")
        }
        let d = try await idp.call("GET", idp.issuer(host: "i7") + "/.well-known/openid-configuration").json
        #expect(d["token_endpoint"] as? String == idp.issuer(host: "i7") + "/token" && d["jwks_uri"] as? String == idp.issuer(host: "i7") + "/jwks")
    }
}

