import Foundation
import Synchronization
import Testing

/// A thousand clients over a handful of issuers cost each issuer one discovery read per trust,
/// however many requests need it at once after a restart.
@Suite("Provider metadata: one read per issuer and trust", .serialized)
struct ProviderFetchTests {
    func discoveryFetches(_ idp: DevIdPServer) async throws -> Int {
        try await HTTP.get(idp.issuer + "/stats").json["discovery_fetches"] as? Int ?? -1
    }

    /// Runs `body` for every item, at most `width` at once.
    func concurrently<T: Sendable>(_ items: [T], width: Int, _ body: @escaping @Sendable (T) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { g in
            for (i, item) in items.enumerated() {
                if i >= width { try await g.next() }
                g.addTask { try await body(item) }
            }
            try await g.waitForAll()
        }
    }

    @Test("1,000 clients on four issuers, registered, the broker restarted, then a login each at once: one discovery read per issuer and trust")
    func oneDiscoveryReadPerIssuerAndTrust() async throws {
        let started = Date()
        let w = try await World()
        defer { w.stop() }
        var idps = [w.idp]
        for _ in 0..<3 { idps.append(try await DevIdPServer()) }
        defer { for i in idps.dropFirst() { i.process.stop() } }
        // Clients of the first issuer alternate between the deployment's trust and their own
        // anchors: two trusts there, so two reads; one everywhere else.
        let anchors = try String(contentsOfFile: try TestCA(name: "fetch-ca").certificate, encoding: .utf8)
        let clients = (0..<1000).map { n in (id: "c\(n)", idp: idps[n % idps.count], anchored: n % idps.count == 0 && n % 8 == 0) }
        let base = w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/"
        try await concurrently(clients, width: 16) { c in
            var body: [String: Any] = ["issuer": c.idp.issuer, "client_id": c.id, "auth_method": "none", "redirect_uri": w.redirectURI,
                                       "scopes": ["openid"]]
            if c.anchored { body["trust_anchors"] = anchors }
            try expectStatus(try await HTTP.put(base + c.id, key: w.operatorKey, json: body), 201)
        }

        // A restarted replica knows no document.
        let port = w.brokers[0].port
        w.brokers[0].stop()
        w.brokers[0] = try await BrokerServer(env: w.env, name: "broker0-restarted", port: port)
        var before: [Int] = []
        for idp in idps { before.append(try await discoveryFetches(idp)) }

        let statuses = Mutex<[Int: Int]>([:])
        try await concurrently(clients, width: 1000) { c in
            let r = try await w.startLogin(subject: "user-" + c.id, client: c.id)
            statuses.withLock { $0[r.status, default: 0] += 1 }
        }
        #expect(statuses.withLock { $0 } == [201: 1000])
        var reads: [Int] = []
        for (i, idp) in idps.enumerated() { reads.append(try await discoveryFetches(idp) - before[i]) }
        #expect(reads == [2, 1, 1, 1], "discovery reads per issuer after the restart")
        #expect(Date().timeIntervalSince(started) < 60)
    }

    @Test("forty logins completed at once after a restart: one discovery read and one JWKS read for their ID tokens")
    func oneKeySetReadForConcurrentCallbacks() async throws {
        let w = try await World()
        defer { w.stop() }
        var callbacks: [String] = []
        for n in 0..<40 {
            let started = try expectStatus(try await w.startLogin(subject: "user\(n)"), 201)
            callbacks.append(try await w.authorize(started["authorization_url"] as! String))
        }
        let port = w.brokers[0].port
        w.brokers[0].stop()
        w.brokers[0] = try await BrokerServer(env: w.env, name: "broker0-restarted", port: port)
        let stats = { () async throws -> (discovery: Int, jwks: Int) in
            let r = try await HTTP.get(w.idp.issuer + "/stats").json
            return (r["discovery_fetches"] as? Int ?? -1, r["jwks_fetches"] as? Int ?? -1)
        }
        let before = try await stats()
        let statuses = Mutex<[Int: Int]>([:])
        try await concurrently(callbacks, width: 40) { url in
            let r = try await w.callback(url)
            statuses.withLock { $0[r.status, default: 0] += 1 }
        }
        #expect(statuses.withLock { $0 } == [200: 40])
        let after = try await stats()
        #expect(after.discovery - before.discovery == 1 && after.jwks - before.jwks == 1, "\(before) → \(after)")
    }
}
