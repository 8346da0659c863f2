import Foundation
import Testing

/// Listeners by audience, TLS on each, mTLS worker identity and certificate reload.
@Suite("Listeners: audiences, TLS, client certificates", .serialized)
struct ListenerTests {
    /// curl against a TLS listener: the status (0 when no HTTP answer came) and the body.
    func curl(_ url: String, ca: String? = nil, cert: (cert: String, key: String)? = nil, key: String? = nil,
              method: String = "GET", body: String? = nil) -> (status: Int, body: String) {
        var args = ["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "5"]
        if let ca { args += ["--cacert", ca] }
        if let cert { args += ["--cert", cert.cert, "--key", cert.key] }
        if let key { args += ["-H", "Authorization: Bearer \(key)"] }
        if let body { args += ["-H", "Content-Type: application/json", "-d", body] }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = args + [url]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return (0, "") }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    @Test("TLS on every listener, mTLS on the internal one: a certificate principal reaches only its tenants, a bearer key still works, other certificates are 401; audiences only on their listener; SIGHUP reloads a certificate, and refuses one that does not match its key")
    func listeners() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "mtls")
        let ca = try TestCA(), rogue = try TestCA(name: "rogue-ca")
        let server = try ca.issue("broker", server: true)
        let worker = try ca.issue("worker-a", server: false), stranger = try ca.issue("worker-b", server: false)
        let forged = try rogue.issue("worker-a", server: false)
        // worker-a's certificate stands for a worker of this tenant only (openssl's colon form is accepted).
        let made = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey, json: [
            "name": "worker-a", "roles": ["worker"], "tenants": [w.tenant], "certificate_sha256": try TestCA.fingerprint(worker.cert)]), 201)
        #expect(made["key"] == nil && (made["certificate_sha256"] as? String)?.count == 64)

        let ports = (TestEnv.freePort(), TestEnv.freePort(), TestEnv.freePort())
        var env = w.env
        env["TOKENBROKER_LISTEN"] = "127.0.0.1:\(ports.0)"
        env["TOKENBROKER_TLS_CERT_FILE"] = server.cert
        env["TOKENBROKER_TLS_KEY_FILE"] = server.key
        env["TOKENBROKER_TLS_CLIENT_CA_FILE"] = ca.certificate
        env["TOKENBROKER_PUBLIC_LISTEN"] = "127.0.0.1:\(ports.1)"
        let publicCert = (cert: ca.path("public.pem"), key: ca.path("public.key"))
        let first = try ca.issue("public-1", server: true)
        try FileManager.default.copyItem(atPath: first.cert, toPath: publicCert.cert)
        try FileManager.default.copyItem(atPath: first.key, toPath: publicCert.key)
        env["TOKENBROKER_PUBLIC_TLS_CERT_FILE"] = publicCert.cert
        env["TOKENBROKER_PUBLIC_TLS_KEY_FILE"] = publicCert.key
        env["TOKENBROKER_OPS_LISTEN"] = "127.0.0.1:\(ports.2)"
        let opsCert = try ca.issue("ops", server: true)
        env["TOKENBROKER_OPS_TLS_CERT_FILE"] = opsCert.cert
        env["TOKENBROKER_OPS_TLS_KEY_FILE"] = opsCert.key
        let p = try ManagedProcess("tokenbroker", ["serve"], env: env, logName: TestEnv.uniqueName("broker-tls"))
        defer { p.stop() }
        let inner = "https://127.0.0.1:\(ports.0)", pub = "https://127.0.0.1:\(ports.1)", ops = "https://127.0.0.1:\(ports.2)"
        for _ in 0..<100 where curl("\(ops)/healthz", ca: ca.certificate).status != 200 {
            guard p.isRunning else { throw TestEnv.Missing(description: "broker exited: \(p.output)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        let token = "\(inner)/v1/tenants/\(w.tenant)/sessions/\(session)/token"

        let ok = curl(token, ca: ca.certificate, cert: worker, method: "POST", body: "{}")
        #expect(ok.status == 200 && ok.body.contains("access_token"), "\(ok)")
        if let at = (try? JSONSerialization.jsonObject(with: Data(ok.body.utf8)) as? [String: Any])?["access_token"] as? String { TestEnv.secret(at) }
        #expect(curl("\(inner)/v1/tenants/other-tenant/sessions/\(session)/token", ca: ca.certificate, cert: worker, method: "POST", body: "{}").status == 404)
        #expect(curl("\(inner)/v1/tenants/\(w.tenant)/sessions", ca: ca.certificate, cert: worker).status == 403, "a worker is not an admin")
        #expect(curl(token, ca: ca.certificate, method: "POST", body: "{}").status == 401, "no certificate")
        #expect(curl(token, ca: ca.certificate, cert: forged, method: "POST", body: "{}").status == 401, "a certificate of another CA")
        #expect(curl(token, ca: ca.certificate, cert: server, method: "POST", body: "{}").status == 401, "a server certificate of the CA")
        #expect(curl(token, ca: ca.certificate, cert: stranger, method: "POST", body: "{}").status == 401, "a certificate that stands for no key")
        #expect(curl(token, ca: ca.certificate, cert: stranger, key: w.workerKey, method: "POST", body: "{}").status == 200, "a bearer key still works")
        #expect(curl("http://127.0.0.1:\(ports.0)/v1/tenants/\(w.tenant)/sessions", key: w.workerKey).status != 200, "plain HTTP on a TLS port")

        // Each audience on its own listener only.
        #expect(curl("\(inner)/healthz", ca: ca.certificate, cert: worker).status == 404)
        #expect(curl("\(pub)/v1/tenants/\(w.tenant)/sessions/\(session)/token", ca: ca.certificate, key: w.workerKey, method: "POST", body: "{}").status == 404)
        #expect(curl("\(pub)/v1/callback?state=x&code=y", ca: ca.certificate).status == 400, "the callback is served on the public listener")
        #expect(curl("\(ops)/metrics", ca: ca.certificate).status == 200, "the ops listener over TLS, no client certificate asked")
        #expect(curl("\(ops)/v1/apikeys", ca: ca.certificate, key: w.operatorKey).status == 404)

        // SIGHUP: the public listener serves its new certificate; the old connection's answers were not cut.
        func served() throws -> String {
            try TestCA.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(ports.1)", "-CAfile", ca.certificate], stdin: "")
                .components(separatedBy: "\n").first { $0.contains("subject=") } ?? ""
        }
        #expect(try served().contains("public-1"))
        let second = try ca.issue("public-2", server: true)
        try FileManager.default.removeItem(atPath: publicCert.cert)
        try FileManager.default.removeItem(atPath: publicCert.key)
        try FileManager.default.copyItem(atPath: second.cert, toPath: publicCert.cert)
        try FileManager.default.copyItem(atPath: second.key, toPath: publicCert.key)
        kill(p.process.processIdentifier, SIGHUP)
        var now = ""
        for _ in 0..<40 {
            try await Task.sleep(for: .milliseconds(100))
            now = try served()
            if now.contains("public-2") { break }
        }
        #expect(now.contains("public-2"), "\(now)")
        #expect(curl("\(pub)/v1/callback?state=x&code=y", ca: ca.certificate).status == 400)
        #expect(p.output.contains("certificates reloaded"))

        // A certificate whose key is another's: the reload is refused, the listener keeps serving public-2.
        let third = try ca.issue("public-3", server: true)
        try FileManager.default.removeItem(atPath: publicCert.cert)
        try FileManager.default.copyItem(atPath: third.cert, toPath: publicCert.cert)
        kill(p.process.processIdentifier, SIGHUP)
        for _ in 0..<40 where !p.output.contains("certificate reload failed") { try await Task.sleep(for: .milliseconds(100)) }
        #expect(p.output.contains("certificate reload failed") && p.output.contains("refused"), "\(p.output.suffix(2000))")
        #expect(try served().contains("public-2"))
        #expect(curl("\(pub)/v1/callback?state=x&code=y", ca: ca.certificate).status == 400)
    }

    @Test("TLS configuration errors are exit 2 naming the variable or file; client certificates with shared public routes are refused")
    func configuration() throws {
        let ca = try TestCA()
        let server = try ca.issue("broker", server: true)
        var env = ["DATABASE_URL": try TestEnv.databaseURL(), "TOKENBROKER_SEALING_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString(),
                   "TOKENBROKER_LISTEN": "127.0.0.1:\(TestEnv.freePort())"]
        env["TOKENBROKER_TLS_CERT_FILE"] = server.cert
        let half = try runCommand("tokenbroker", ["serve"], env: env)
        #expect(half.status == 2 && half.err.contains("TOKENBROKER_TLS_KEY_FILE"), "\(half.err)")
        env["TOKENBROKER_TLS_KEY_FILE"] = ca.path("missing.key")
        let missing = try runCommand("tokenbroker", ["serve"], env: env)
        #expect(missing.status == 2 && missing.err.contains("missing.key"), "\(missing.err)")
        env["TOKENBROKER_TLS_KEY_FILE"] = server.key
        env["TOKENBROKER_TLS_CLIENT_CA_FILE"] = ca.certificate
        let shared = try runCommand("tokenbroker", ["serve"], env: env)
        #expect(shared.status == 2 && shared.err.contains("TOKENBROKER_PUBLIC_LISTEN"), "\(shared.err)")
    }
}
