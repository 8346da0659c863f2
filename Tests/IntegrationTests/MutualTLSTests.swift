import BrokerCore
import Foundation
import Testing

/// Mutual TLS client authentication (RFC 8705 §2) against the development IdP over HTTPS in
/// mutual-TLS mode: its listener asks for client certificates of its client CA, and a client
/// registered there by its certificate is authenticated by it alone. The broker keeps each
/// client's certificate and key sealed, shows only what identifies the certificate, and presents
/// it on every call to the provider, at the provider's `mtls_endpoint_aliases` (§5).
@Suite("Mutual TLS client authentication", .serialized)
struct MutualTLSTests {
    /// A client certificate of a test CA as the broker takes it (PEM texts), and how the IdP's
    /// listener (SHA-256, hex) and a bound token (`x5t#S256`, base64url) name it.
    struct Credential {
        let chain: String, key: String, sha256Hex: String, x5t: String
        var pem: [String: Any] { ["tls_client_certificate": chain, "tls_client_key": key] }
    }

    static func credential(_ pki: TestCA, _ cn: String) throws -> Credential {
        let (certPath, keyPath) = try pki.issue(cn, server: false)
        return try credential(certPath: certPath, keyPath: keyPath)
    }

    static func credential(certPath: String, keyPath: String) throws -> Credential {
        let chain = try String(contentsOfFile: certPath, encoding: .utf8), key = try String(contentsOfFile: keyPath, encoding: .utf8)
        // Each line of the key: it must appear in no log and no database column.
        for line in key.split(separator: "\n") where !line.hasPrefix("-----") { TestEnv.secret(String(line)) }
        let hex = try TestCA.fingerprint(certPath).replacingOccurrences(of: ":", with: "").lowercased()
        let bytes = stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let s = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[s..<hex.index(s, offsetBy: 2)], radix: 16)!
        }
        return Credential(chain: chain, key: key, sha256Hex: hex, x5t: Base64URL.encode(bytes))
    }

    /// An installation whose IdP is in mutual-TLS mode, and a registration body for its clients.
    struct Setup {
        let w: World
        let provider: DevIdPServer
        let clientPKI: TestCA
        /// The first client's certificate (`CN=mtls-a`).
        let a: Credential

        init() async throws {
            clientPKI = try TestCA(name: "client-pki")
            a = try MutualTLSTests.credential(clientPKI, "mtls-a")
            provider = try await DevIdPServer(tls: try TestCA(name: "idp-pki"), clientCA: clientPKI)
            w = try await World(idp: provider)
        }

        /// `handOut`: certificate-bound tokens may be handed to workers (these tests read them).
        func registration(_ idpClient: String, _ c: Credential?, method: String = "tls_client_auth", handOut: Bool = true,
                          upstream: Bool = false) -> [String: Any] {
            var r: [String: Any] = ["issuer": provider.issuer, "client_id": idpClient, "auth_method": method,
                                    "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"],
                                    "hand_out_certificate_bound": handOut]
            // The outbound proxy's upstream: the IdP's protected resource (over its mutual-TLS listener).
            if upstream { r["upstream"] = ["base_url": provider.issuer + "/resource", "allow_private_addresses": true] }
            if let c { r.merge(c.pem) { $1 } }
            return r
        }

        func put(_ client: String, _ body: [String: Any]) async throws -> HTTP.Reply {
            try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(client)", key: w.operatorKey, json: body)
        }

        /// A client registered at the broker with `c`, and at the IdP by the subject DN of a
        /// certificate of its client CA (`tls_client_auth`, RFC 8705 §2.1.2) or by the
        /// certificate's thumbprint (`self_signed_tls_client_auth`, §2.2).
        func client(_ name: String, _ c: Credential, bySubject subject: String? = nil, handOut: Bool = true, upstream: Bool = false) async throws -> String {
            let id = TestEnv.uniqueName(name)
            try await provider.registerClient(id, secret: nil, redirectURI: w.redirectURI, accessTTL: 600,
                                              tlsCertificateSHA256: subject == nil ? c.sha256Hex : nil, tlsSubjectDN: subject)
            try expectStatus(try await put(name, registration(id, c, method: subject == nil ? "self_signed_tls_client_auth" : "tls_client_auth",
                                                              handOut: handOut, upstream: upstream)), 201)
            return id
        }

        /// A login through the broker; the browser's visit to the IdP goes through curl (its CA).
        func login(client: String, subject: String) async throws -> String {
            let started = try expectStatus(try await w.startLogin(subject: subject, client: client), 201)
            let r = try await CurlHTTP(ca: provider.ca!.certificate).get(started["authorization_url"] as! String)
            guard r.status == 303, let location = r.headers["location"] else { throw UnexpectedStatus(description: "authorize: \(r.status)") }
            let done = try expectStatus(try await w.callback(location), 200)
            return try #require(done["session_id"] as? String)
        }

        func refresh(_ session: String) async throws -> HTTP.Reply { try await w.token(session, body: ["min_ttl": 60, "force_refresh": true]) }
    }

    /// The claims of a JWT access token (not verified: the IdP's own).
    static func claims(_ jwt: String) -> [String: Any] {
        let part = jwt.split(separator: ".").dropFirst().first.map(String.init) ?? ""
        let data = Base64URL.decode(part).map { Data($0) } ?? Data()
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    @Test("a tls_client_auth client logs in and refreshes presenting its certificate at the mTLS aliases, over one kept connection; its tokens are bound to the certificate")
    func loginAndRefreshes() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let a = s.a
        let id = try await s.client("mtls", a, bySubject: "CN=mtls-a")
        let session = try await s.login(client: "mtls", subject: "ada")

        let opened = try await s.provider.counters(client: id)["connections_opened"] as? Int ?? -1
        for i in 1...3 {
            let r = try expectStatus(try await s.refresh(session), 200)
            let cnf = Self.claims(r["access_token"] as? String ?? "")["cnf"] as? [String: Any]
            #expect(cnf?["x5t#S256"] as? String == a.x5t, "refresh \(i): the access token is not bound to the certificate")
        }
        let c = try await s.provider.counters(client: id)
        // The code exchange and three refreshes, each authenticated by the certificate, at the alias.
        #expect(c["mtls_authentications"] as? Int == 4 && c["mtls_alias_calls"] as? Int == 4, "\(c)")
        #expect(c["client_certificates_seen"] as? [String] == [a.sha256Hex] && c["client_certificates_refused"] as? Int == 0)
        #expect((c["token_calls"] as? [String: Int])?["refresh_token"] == 3)
        // No new connection for the refreshes: the one the code exchange opened was kept.
        // (+1: this stats request's own connection.)
        #expect(c["connections_opened"] as? Int == opened + 1, "refreshes opened connections: \(opened) → \(c["connections_opened"] ?? "?")")

        // Revocation (RFC 7009) goes to the alias with the certificate too.
        let revoked = try expectStatus(try await HTTP.request("DELETE", s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/sessions/\(session)",
                                                              key: s.w.workerKey), 200)
        #expect(revoked["idp_revocation"] as? String == "confirmed")
        let r = try await s.provider.counters(client: id)
        let revocations = r["revocations"] as? Int ?? 0, authentications = r["mtls_authentications"] as? Int ?? 0
        #expect(revocations >= 1 && authentications == 4 + revocations && r["mtls_alias_calls"] as? Int == authentications, "\(r)")
    }

    @Test("two clients with different certificates on one IdP never share a connection: each request shows its own client's certificate")
    func connectionsPerCertificate() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let a = s.a, b = try Self.credential(s.clientPKI, "mtls-b")
        let idA = try await s.client("mtls-a", a), idB = try await s.client("mtls-b", b)
        let sa = try await s.login(client: "mtls-a", subject: "ada"), sb = try await s.login(client: "mtls-b", subject: "bob")
        let opened = try await s.provider.counters(client: idA)["connections_opened"] as? Int ?? -1
        for _ in 1...3 {
            try expectStatus(try await s.refresh(sa), 200)
            try expectStatus(try await s.refresh(sb), 200)
        }
        // Each client kept its own connection: taking the other's (and opening anew, since the
        // certificate differs) would show here. (+1: this stats request's own connection.)
        let after = try await s.provider.counters(client: idA)["connections_opened"] as? Int ?? -1
        #expect(after == opened + 1, "interleaved refreshes opened connections: \(opened) → \(after)")
        // A request of one client on a connection made with the other's certificate would be
        // seen with that certificate, and refused.
        for (id, c) in [(idA, a), (idB, b)] {
            let n = try await s.provider.counters(client: id)
            #expect(n["client_certificates_seen"] as? [String] == [c.sha256Hex], "\(id): \(n["client_certificates_seen"] ?? "?")")
            #expect(n["client_certificates_refused"] as? Int == 0 && n["mtls_authentications"] as? Int == 4)
        }
    }

    @Test("a certificate the IdP does not know for the client, or from a CA it does not trust, is refused and reported; the refresh token stays unspent")
    func wrongCertificates() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let a = s.a
        let id = try await s.client("mtls", a, bySubject: "CN=mtls-a")
        let session = try await s.login(client: "mtls", subject: "ada")

        // Another certificate of the trusted CA: the IdP refuses the client (invalid_client).
        let other = try Self.credential(s.clientPKI, "mtls-other")
        try expectStatus(try await s.put("mtls", s.registration(id, other)), 200)
        let refused = try await s.refresh(session)
        #expect(refused.status == 502 && refused["error"] as? String == "idp_client_rejected", "\(refused.status) \(refused.json)")
        // The log names the refusal and the certificate presented.
        #expect(s.w.brokers[0].process.output.contains("invalid_client (HTTP 401) at the token endpoint, without a DPoP proof, presenting the client certificate x5t#S256 \(other.x5t)"))

        // A certificate of the same subject from a CA the IdP does not trust: its listener refuses
        // the request (401).
        let rogue = try Self.credential(try TestCA(name: "rogue-pki"), "mtls-a")
        try expectStatus(try await s.put("mtls", s.registration(id, rogue)), 200)
        let untrusted = try await s.refresh(session)
        #expect(untrusted.status == 502 && untrusted["error"] as? String == "idp_client_rejected", "\(untrusted.status) \(untrusted.json)")
        #expect(s.w.brokers[0].process.output.contains("(HTTP 401) at the token endpoint, without a DPoP proof, presenting the client certificate x5t#S256 \(rogue.x5t)"))

        var c = try await s.provider.counters(client: id)
        #expect(c["client_certificates_seen"] as? [String] == [a.sha256Hex, other.sha256Hex].sorted(), "\(c)")
        #expect(c["refresh_presentations"] as? Int == 0, "a refresh token reached the IdP with a refused certificate")

        // Given its own certificate again, the session refreshes (its refresh token was never spent).
        try expectStatus(try await s.put("mtls", s.registration(id, a)), 200)
        var after = try await s.refresh(session)
        for _ in 0..<40 where after.status == 503 {   // the refusals' backoff
            try await Task.sleep(for: .milliseconds(250))
            after = try await s.refresh(session)
        }
        #expect(after.status == 200, "\(after.status) \(after.json)")
        c = try await s.provider.counters(client: id)
        #expect(c["refresh_presentations"] as? Int == 1 && c["reuse_detected"] as? Int == 0)
    }

    @Test("the client view shows the certificate's x5t#S256, subject and notAfter; the chain and key are sealed, in no answer and no column in clear")
    func sealedAndShown() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let a = s.a
        let id = TestEnv.uniqueName("mtls")
        let put = try expectStatus(try await s.put("mtls", s.registration(id, a)), 201)
        let got = try expectStatus(try await HTTP.get(s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/clients/mtls", key: s.w.operatorKey), 200)
        for r in [put, got] {
            let view = r["tls_client_certificate"] as? [String: Any]
            #expect(view?["x5t#S256"] as? String == a.x5t && view?["subject"] as? String == "CN=mtls-a", "\(r.json)")
            #expect((view?["not_after"] as? String)?.isEmpty == false)
            let text = String(decoding: r.data, as: UTF8.self)
            #expect(!text.contains("BEGIN") && !text.contains(a.key.split(separator: "\n")[1]), "the answer carries PEM")
        }
        // A PUT without the certificate keeps the stored one.
        try expectStatus(try await s.put("mtls", s.registration(id, nil)), 200)
        let row = try runPSQL("""
            SELECT tls_client_certificate_sha256, tls_client_certificate_subject, encode(tls_client_credential, 'escape')
            FROM clients WHERE tenant_id = '\(s.w.tenant)' AND id = 'mtls'
            """)
        #expect(row.hasPrefix(a.x5t + "|CN=mtls-a|"), "\(row.prefix(80))")
        #expect(!row.contains("BEGIN") && !row.contains(a.key.split(separator: "\n")[1]) && !row.contains(a.chain.split(separator: "\n")[1]),
                "the credential is stored in clear")

        // Its expiry as a gauge, counted with the backlog (every 15 s): about two days ahead (TestCA's -days 2).
        let series = "tokenbroker_client_certificate_expiry_seconds{tenant=\"\(s.w.tenant)\",client=\"mtls\"} "
        var value: Double?
        for _ in 0..<50 where value == nil {
            let text = try await HTTP.get(s.w.brokers[0].url + "/metrics").text
            value = text.split(separator: "\n").first { $0.hasPrefix(series) }.flatMap { Double($0.dropFirst(series.count)) }
            if value == nil { try await Task.sleep(for: .milliseconds(500)) }
        }
        let seconds = value ?? -1
        #expect(seconds > 86_400 * 1.9 && seconds <= 86_400 * 2, "gauge: \(seconds) (-1: absent)")
    }

    @Test("bad certificates are 400 naming the fault, and nothing is stored: no PEM, a key of another certificate, an expired certificate, an encrypted key, a chain in the wrong order, a key alone, a method without certificates")
    func badInput() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let a = s.a, b = try Self.credential(s.clientPKI, "mtls-b")
        let pastCA = try TestCA(name: "past-pki")
        let expired = try Self.credential(certPath: try pastCA.pastCA("old"), keyPath: pastCA.path("old.key"))
        let id = TestEnv.uniqueName("bad")
        func refused(_ body: [String: Any], _ code: String, _ message: String) async throws {
            let r = try await s.put("bad", body)
            #expect(r.status == 400 && r["error"] as? String == code, "\(r.status) \(r.json)")
            #expect((r["message"] as? String)?.contains(message) == true, "\(r.json)")
        }
        var garbage = s.registration(id, a)
        garbage["tls_client_certificate"] = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
        try await refused(garbage, "invalid_tls_client_certificate", "certificate 1 does not parse")
        var mismatched = s.registration(id, a)
        mismatched["tls_client_key"] = b.key
        try await refused(mismatched, "invalid_tls_client_certificate", "is not the private key of the certificate")
        try await refused(s.registration(id, expired), "invalid_tls_client_certificate", "expired at 2021-01-01T00:00:00Z")
        var encrypted = s.registration(id, a)
        encrypted["tls_client_key"] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
        try await refused(encrypted, "invalid_tls_client_certificate", "must be one unencrypted private key")
        var reversed = s.registration(id, a)
        reversed["tls_client_certificate"] = s.clientPKI.pem + a.chain
        try await refused(reversed, "invalid_tls_client_certificate", "the chain is in the wrong order")
        var keyAlone = s.registration(id, a)
        keyAlone["tls_client_certificate"] = nil
        try await refused(keyAlone, "invalid_request", "'tls_client_key' needs its 'tls_client_certificate'")
        try await refused(s.registration(id, nil), "invalid_request", "needs a tls_client_certificate")
        try await refused(s.registration(id, a, method: "client_secret_post").merging(["client_secret": "s-" + UUID().uuidString]) { $1 },
                          "invalid_request", "only for auth_method tls_client_auth")
        #expect(try runPSQL("SELECT count(*) FROM clients WHERE tenant_id = '\(s.w.tenant)' AND id = 'bad'").hasPrefix("0"))
    }
}
