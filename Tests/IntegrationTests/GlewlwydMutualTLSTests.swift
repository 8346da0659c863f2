import BrokerCore
import Foundation
import Testing

/// Mutual TLS (RFC 8705) against glewlwyd 2.7.5 over HTTPS (scripts/glewlwyd.sh's `tls`
/// server): its listener asks for client certificates of its client CA (and trusts the
/// self-signed ones it lists), its OpenID Connect plugin authenticates clients by them at its
/// `mtls_endpoint_aliases` and binds their access tokens to them (`cnf.x5t#S256`).
@Suite("glewlwyd 2.7.5 with mutual TLS", .serialized, .enabled(if: Glewlwyd.dir != nil, "make test starts glewlwyd (scripts/glewlwyd.sh)"))
struct GlewlwydMutualTLSTests {
    typealias Credential = MutualTLSTests.Credential

    struct Setup {
        let w: World
        let g: Glewlwyd
        /// glewlwyd's client CA (a copy of scripts/glewlwyd.sh's, to issue client certificates).
        let ca: TestCA

        init() async throws {
            g = try Glewlwyd("tls")
            ca = try TestCA(copying: g.pki.appendingPathComponent("client-ca.pem").path, key: g.pki.appendingPathComponent("client-ca.key").path)
            w = try await World(replicas: 2, extraEnv: ["TOKENBROKER_PROVIDER_CA_FILE": g.serverCA])
        }

        /// One of the self-signed certificates glewlwyd's listener trusts (`self-1`, `self-2`).
        func selfSigned(_ name: String) throws -> Credential {
            try MutualTLSTests.credential(certPath: g.pki.appendingPathComponent("\(name).pem").path,
                                          keyPath: g.pki.appendingPathComponent("\(name).key").path)
        }

        /// The certificate as a JWK with `x5c` (how glewlwyd registers a self-signed one).
        func jwk(_ certPath: String) throws -> [String: Any] {
            let out = try TestCA.run("/usr/bin/python3", ["-c", """
                import base64,json,subprocess,sys
                der=subprocess.run(['openssl','x509','-in',sys.argv[1],'-outform','DER'],capture_output=True,check=True).stdout
                pub=subprocess.run(['openssl','x509','-in',sys.argv[1],'-pubkey','-noout'],capture_output=True,check=True).stdout
                point=subprocess.run(['openssl','pkey','-pubin','-outform','DER'],input=pub,capture_output=True,check=True).stdout[-65:]
                b=lambda x: base64.urlsafe_b64encode(x).rstrip(b'=').decode()
                print(json.dumps({'kty':'EC','crv':'P-256','x':b(point[1:33]),'y':b(point[33:]),'use':'sig','x5c':[base64.b64encode(der).decode()]}))
                """, certPath])
            return try JSONSerialization.jsonObject(with: Data(out.utf8)) as! [String: Any]
        }

        /// Registers the client at glewlwyd (by subject DN, or by the self-signed certificates
        /// `trusted`) and at the broker with `c`.
        func client(_ id: String, _ c: Credential, subject: String? = nil, trusted: [String] = []) async throws {
            var extra: [String: Any] = ["token_endpoint_auth_method": [subject == nil ? "self_signed_tls_client_auth" : "tls_client_auth"]]
            if let subject { extra["tls_client_auth_subject_dn"] = subject } else { extra["jwks"] = ["keys": try trusted.map { try jwk($0) }] }
            try await g.registerClient(id, secret: nil, redirectURI: w.redirectURI, extra: extra)
            let r = try await put(registration(id, c, method: subject == nil ? "self_signed_tls_client_auth" : "tls_client_auth"))
            #expect(r.status == 201 || r.status == 200, "\(r.status) \(r["message"] ?? "-")")
        }

        func registration(_ id: String, _ c: Credential, method: String) -> [String: Any] {
            // hand_out_certificate_bound: these tests read the bound tokens (at glewlwyd's introspection).
            var r: [String: Any] = ["issuer": g.issuer, "client_id": id, "auth_method": method, "redirect_uri": w.redirectURI, "scopes": ["openid"],
                                    "hand_out_certificate_bound": true]
            r.merge(c.pem) { $1 }
            return r
        }

        func put(_ body: [String: Any]) async throws -> HTTP.Reply {
            try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/mtls", key: w.operatorKey, json: body)
        }

        func login(_ id: String) async throws -> String {
            let started = try expectStatus(try await w.startLogin(subject: "alice", client: "mtls"), 201)
            let done = try expectStatus(try await w.callback(try await g.authorize(started["authorization_url"] as! String, client: id)), 200)
            return try #require(done["session_id"] as? String)
        }

        /// A forced refresh at `replica`; the access token's `cnf.x5t#S256` as glewlwyd's
        /// introspection (at its mTLS alias, authenticated by `c`) states it.
        func refresh(_ session: String, replica: Int, id: String, _ c: Credential, certPaths: (String, String)) async throws -> String? {
            let r = try expectStatus(try await w.token(session, replica: replica, body: ["min_ttl": 60, "force_refresh": true]), 200)
            let at = try #require(r["access_token"] as? String)
            let i = try await g.introspect(at, client: id, cert: certPaths)
            #expect(i["active"] as? Bool == true, "introspection: active \(i["active"] ?? "-")")
            return (i["cnf"] as? [String: Any])?["x5t#S256"] as? String
        }
    }

    /// tls_client_auth: glewlwyd's CA issued the certificate; glewlwyd knows the client by its subject DN.
    @Test("tls_client_auth (a CA the test made): login, certificate-bound tokens (introspection's cnf.x5t#S256), two refreshes, a wrong certificate 502 idp_client_rejected, a replaced one used by the next refresh on both replicas, revocation")
    func tlsClientAuth() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let id = TestEnv.uniqueName("glew-mtls")
        let paths = try s.ca.issue(id, server: false)
        let a = try MutualTLSTests.credential(certPath: paths.cert, keyPath: paths.key)
        try await s.client(id, a, subject: "CN=\(id)")
        let session = try await s.login(id)
        for replica in [0, 1] {
            #expect(try await s.refresh(session, replica: replica, id: id, a, certPaths: paths) == a.x5t, "refresh on replica \(replica): not bound to the certificate")
        }

        // Without hand_out_certificate_bound, the bound token is refused to a worker, naming the
        // outbound proxy; through the proxy (which presents the certificate) glewlwyd's userinfo answers.
        var strict = s.registration(id, a, method: "tls_client_auth")
        strict["hand_out_certificate_bound"] = false
        strict["upstream"] = ["base_url": s.g.issuer, "allow_private_addresses": true]
        try expectStatus(try await s.put(strict), 200)
        let refusedHandOut = try await s.w.token(session)
        #expect(refusedHandOut.status == 409 && refusedHandOut["error"] as? String == "token_certificate_bound", "\(refusedHandOut.status)")
        let key = try await s.w.newKey(roles: ["proxy"], tenants: [s.w.tenant])
        let info = try await HTTP.request("GET", s.w.brokers[0].url + "/v1/tenants/\(s.w.tenant)/proxy/sessions/\(session)/userinfo", key: key)
        #expect(info.status == 200 && info["sub"] != nil, "userinfo through the proxy: \(info.status)")
        try expectStatus(try await s.put(s.registration(id, a, method: "tls_client_auth")), 200)

        // Another certificate of the same CA, another subject: glewlwyd refuses the client.
        let otherPaths = try s.ca.issue(id + "-other", server: false)
        let other = try MutualTLSTests.credential(certPath: otherPaths.cert, keyPath: otherPaths.key)
        try expectStatus(try await s.put(s.registration(id, other, method: "tls_client_auth")), 200)
        let refused = try await s.w.token(session, body: ["min_ttl": 60, "force_refresh": true])
        #expect(refused.status == 502 && refused["error"] as? String == "idp_client_rejected", "\(refused.status) \(refused["error"] ?? "-")")
        #expect(s.w.brokers[0].process.output.contains("presenting the client certificate x5t#S256 \(other.x5t)"))

        // A new certificate of the same subject (a renewal) replaces it: the next refresh on
        // each replica presents it, and the new tokens are bound to it.
        let renewedPaths = try s.ca.issue(id, server: false, file: id + "-renewed")
        let renewed = try MutualTLSTests.credential(certPath: renewedPaths.cert, keyPath: renewedPaths.key)
        try expectStatus(try await s.put(s.registration(id, renewed, method: "tls_client_auth")), 200)
        try await Self.replaced(s, session, id: id, renewed, certPaths: renewedPaths)
        try await Self.revoke(s, session, id: id, certPaths: renewedPaths)
    }

    /// self_signed_tls_client_auth: glewlwyd knows the client by its certificate (a JWK with x5c).
    @Test("self_signed_tls_client_auth: login, certificate-bound tokens, two refreshes, a certificate glewlwyd does not list 502 idp_client_rejected, a replaced one used by the next refresh on both replicas, revocation")
    func selfSignedTLSClientAuth() async throws {
        let s = try await Setup()
        defer { s.w.stop() }
        let id = TestEnv.uniqueName("glew-self")
        let one = try s.selfSigned("self-1"), two = try s.selfSigned("self-2"), three = try s.selfSigned("self-3")
        let path = { (name: String) in (s.g.pki.appendingPathComponent("\(name).pem").path, s.g.pki.appendingPathComponent("\(name).key").path) }
        let onePaths = path("self-1"), twoPaths = path("self-2")
        // glewlwyd lists self-1 and the next one, self-2 (its listener trusts self-3 as well).
        try await s.client(id, one, trusted: [onePaths.0, twoPaths.0])
        let session = try await s.login(id)
        for replica in [0, 1] {
            #expect(try await s.refresh(session, replica: replica, id: id, one, certPaths: onePaths) == one.x5t, "refresh on replica \(replica)")
        }

        // self-3 is not the client's at glewlwyd.
        try expectStatus(try await s.put(s.registration(id, three, method: "self_signed_tls_client_auth")), 200)
        let refused = try await s.w.token(session, body: ["min_ttl": 60, "force_refresh": true])
        #expect(refused.status == 502 && refused["error"] as? String == "idp_client_rejected", "\(refused.status) \(refused["error"] ?? "-")")
        #expect(s.w.brokers[0].process.output.contains("presenting the client certificate x5t#S256 \(three.x5t)"))

        // self-2 replaces it in the registration: the next refresh on each replica presents it.
        try expectStatus(try await s.put(s.registration(id, two, method: "self_signed_tls_client_auth")), 200)
        try await Self.replaced(s, session, id: id, two, certPaths: twoPaths)
        try await Self.revoke(s, session, id: id, certPaths: twoPaths)
    }

    /// After a certificate was replaced in the registration (at replica 0): once the change
    /// notice had time to arrive (it takes milliseconds), the next refresh on each replica
    /// presents the new certificate — glewlwyd binds the new tokens to it.
    static func replaced(_ s: Setup, _ session: String, id: String, _ c: Credential, certPaths: (String, String)) async throws {
        try await Task.sleep(for: .milliseconds(300))
        for replica in [1, 0] {
            let x5t = try await s.refresh(session, replica: replica, id: id, c, certPaths: certPaths)
            #expect(x5t == c.x5t, "replica \(replica) after the replacement: \(x5t ?? "unbound")")
        }
    }

    /// DELETE of the session: glewlwyd confirms (at its revocation alias, by the certificate), and
    /// its introspection then says the refresh token is over.
    static func revoke(_ s: Setup, _ session: String, id: String, certPaths: (String, String)) async throws {
        let revoked = try expectStatus(try await HTTP.request("DELETE", s.w.brokers[1].url + "/v1/tenants/\(s.w.tenant)/sessions/\(session)",
                                                              key: s.w.workerKey), 200)
        #expect(revoked["idp_revocation"] as? String == "confirmed", "\(revoked["idp_revocation"] ?? "-")")
        let tokens = try TestCA.run("/usr/bin/python3", ["-c", """
            import sqlite3,sys
            print(sqlite3.connect(sys.argv[1]).execute('select count(*), sum(gpor_enabled) from gpo_refresh_token where gpor_client_id=?',(sys.argv[2],)).fetchone())
            """, s.g.dir.appendingPathComponent("tls.db").path, id])
        #expect(tokens.hasSuffix(", 0)\n"), "glewlwyd's refresh tokens (count, enabled): \(tokens)")
    }
}
