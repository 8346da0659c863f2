import Foundation
import Testing

@Suite("Operations: start-up, configuration, health, CLI", .serialized)
struct OperationsTests {
    func env(_ extra: [String: String] = [:]) throws -> [String: String] {
        var e = ["DATABASE_URL": try TestEnv.databaseURL(),
                 "TOKENBROKER_SEALING_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString()]
        for (k, v) in extra { e[k] = v }
        return e
    }

    @Test("serve refuses an unmigrated database with a clear message, then migrate makes it ready")
    func refusesUnmigrated() async throws {
        let db = "fresh_" + UUID().uuidString.prefix(8).lowercased()
        _ = try runPSQL("CREATE DATABASE \(db)")
        defer { _ = try? runPSQL("DROP DATABASE \(db) WITH (FORCE)") }
        let url = try TestEnv.databaseURL(named: db)
        #expect(url.contains(db))
        let unmigrated = try runCommand("tokenbroker", ["migrate", "status"], env: try env(["DATABASE_URL": url]))
        #expect(unmigrated.status == 3 && unmigrated.out.contains("\"current\":false") && unmigrated.out.contains("\"applied\":[]"), "\(unmigrated.out)")
        let refused = try runCommand("tokenbroker", ["serve"], env: try env(["DATABASE_URL": url, "TOKENBROKER_LISTEN": "127.0.0.1:\(TestEnv.freePort())"]))
        #expect(refused.status == 2)
        #expect(refused.err.contains("not migrated") && refused.err.contains("tokenbroker migrate"))
        let migrated = try runCommand("tokenbroker", ["migrate"], env: try env(["DATABASE_URL": url]))
        #expect(migrated.status == 0)
        let status = try runCommand("tokenbroker", ["migrate", "status"], env: try env(["DATABASE_URL": url]))
        #expect(status.status == 0 && status.out.contains("\"current\":true") && status.out.contains("\"pending\":[]"), "\(status.out)")
        let b = try await BrokerServer(env: try env(["DATABASE_URL": url]))
        defer { b.stop() }
        try expectStatus(try await HTTP.get(b.url + "/readyz"), 200)
    }

    @Test("sealing-key rotation as the README says, two replicas on different keyrings at each step: never a 5xx; after reseal the old key counts 0 and a replica without it serves everything")
    func keyRotation() async throws {
        let db = "rotation_" + UUID().uuidString.prefix(8).lowercased()   // alone: reseal walks every value in the database
        _ = try runPSQL("CREATE DATABASE \(db)")
        defer { _ = try? runPSQL("DROP DATABASE \(db) WITH (FORCE)") }
        func key(_ id: String) -> String { id + ":" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }
        let k1 = key("k1"), k2 = key("k2")
        let w = try await World(extraEnv: ["DATABASE_URL": try TestEnv.databaseURL(named: db), "TOKENBROKER_SEALING_KEYS": k1])
        defer { w.stop() }
        func ring(_ keys: String) -> [String: String] { w.env.merging(["TOKENBROKER_SEALING_KEYS": keys]) { $1 } }
        var sessions: [String] = []
        for subject in ["rot-a", "rot-b", "rot-c"] { sessions.append(try await w.importSession(subject: subject)) }
        // A revocation the IdP has not confirmed yet: its token waits in the outbox, sealed under k1.
        try await w.idp.fail(status: 503, retryAfter: nil, count: 1000, endpoint: "revoke")
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(sessions[2])", key: w.workerKey), 200)
        func serve(_ replicas: [Int]) async throws {
            for s in sessions.prefix(2) {
                for r in replicas {
                    let t = try await w.token(s, replica: r, body: ["min_ttl": 60, "force_refresh": true])
                    #expect(t.status == 200, "replica \(r): \(t.text)")
                }
            }
        }
        // Step 1: the new key, decrypt-only, on every replica (k1 still seals).
        w.brokers.append(try await BrokerServer(env: ring("\(k1),\(k2):decrypt-only"), name: "broker-step1"))
        try await serve([0, 1])
        w.brokers[0].stop()
        // Step 2: k2 current, rolled out while a step-1 replica still serves.
        w.brokers.append(try await BrokerServer(env: ring("\(k2),\(k1)"), name: "broker-step2"))
        try await serve([2, 1, 2])
        w.brokers[1].stop()
        func count() throws -> [String: Int] {
            let c = try runCommand("tokenbroker", ["sealing-key", "count"], env: ring("\(k2),\(k1)"))
            #expect(c.status == 0, "\(c.err)")
            return (try JSONSerialization.jsonObject(with: Data(c.out.utf8)) as? [String: Any])?["values"] as? [String: Int] ?? [:]
        }
        #expect((try count()["k1"] ?? 0) > 0, "the client secret, the outbox entry and tokens written before step 2 are under k1")
        // Step 3: reseal while a replica serves; then k1 counts 0.
        let reseal = try runCommand("tokenbroker", ["sealing-key", "reseal", "--batch", "2"], env: ring("\(k2),\(k1)"))
        #expect(reseal.status == 0, "\(reseal.err)")
        let summary = try JSONSerialization.jsonObject(with: Data(reseal.out.utf8)) as? [String: Any]
        #expect(summary?["current"] as? String == "k2" && (summary?["resealed"] as? Int ?? 0) > 0, "\(reseal.out)")
        #expect(try count()["k1"] == nil)
        // Step 4: k1 removed: a replica with k2 alone serves and refreshes every session, with the client's secret.
        w.brokers.append(try await BrokerServer(env: ring(k2), name: "broker-k2-only"))
        try await serve([3, 2, 3])
        var metrics = try await HTTP.get(w.brokers[3].url + "/metrics")
        for _ in 0..<40 where !metrics.text.contains("tokenbroker_sealed_values{") {   // counted a second after start
            try await Task.sleep(for: .milliseconds(100))
            metrics = try await HTTP.get(w.brokers[3].url + "/metrics")
        }
        #expect(metrics.text.contains("tokenbroker_sealed_values{key=\"k2\"}") && !metrics.text.contains("tokenbroker_sealed_values{key=\"k1\"}"))
        for b in w.brokers { #expect(!b.process.output.contains("\"status\":5"), "a 5xx in \(b.process.log.lastPathComponent)") }
        // The re-sealed outbox entry is delivered by the replica without k1 once the IdP answers.
        try await w.idp.fail(status: 503, retryAfter: nil, count: 0, endpoint: "revoke")
        let url = try TestEnv.databaseURL(named: db)
        _ = try runPSQL("UPDATE revocation_outbox SET next_attempt_at = now()", url: url)   // its backoff is not this test's subject
        var pending = "1"
        for _ in 0..<100 where pending != "0" {
            try await Task.sleep(for: .milliseconds(100))
            pending = try runPSQL("SELECT count(*) FROM revocation_outbox", url: url).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(pending == "0")
    }

    @Test("metrics: request durations by route and status class, refreshes and their latency by client, JWK Set fetches, the outbox backlog")
    func metricsForAlerts() async throws {
        let w = try await World()
        defer { w.stop() }
        let s = try await w.importSession(subject: "m-one")
        try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)
        try expectStatus(try await w.token("ses_nobody"), 404)
        // A revocation the IdP does not confirm stays in the outbox; a replica started now counts it a second later.
        try await w.idp.fail(status: 503, retryAfter: nil, count: 1000, endpoint: "revoke")
        let gone = try await w.importSession(subject: "m-gone")
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(gone)", key: w.workerKey), 200)
        w.brokers.append(try await BrokerServer(env: w.env, name: "broker-backlog"))
        func value(_ text: String, _ series: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        var depth: Double? = nil
        for _ in 0..<50 where !((depth ?? 0) >= 1) {   // NaN until the first count
            try await Task.sleep(for: .milliseconds(100))
            depth = value(try await HTTP.get(w.brokers[1].url + "/metrics").text, "tokenbroker_revocation_outbox_depth")
        }
        #expect((depth ?? 0) >= 1, "outbox depth: \(String(describing: depth))")
        let m = try await HTTP.get(w.brokers[0].url + "/metrics").text
        let client = "tenant=\"\(w.tenant)\",client=\"\(w.client)\""
        #expect((value(m, "tokenbroker_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/tenants/{t}/sessions/{id}/token\",status=\"2xx\"}") ?? 0) >= 1)
        #expect((value(m, "tokenbroker_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/tenants/{t}/sessions/{id}/token\",status=\"4xx\"}") ?? 0) >= 1)
        #expect((value(m, "tokenbroker_refreshes_total{outcome=\"ok\",\(client)}") ?? 0) >= 1, "the forced refresh")
        #expect((value(m, "tokenbroker_refresh_seconds_count{\(client)}") ?? 0) >= 1)
        #expect((value(m, "tokenbroker_jwks_fetches_total{outcome=\"ok\"}") ?? 0) >= 1, "the refreshed ID token was checked against the JWKS")
        #expect(value(m, "tokenbroker_signout_jobs_running") != nil && value(m, "tokenbroker_revocation_outbox_oldest_seconds") != nil)
        #expect(!m.contains("ses_nobody") && !m.contains(s), "no session id is a label")
    }

    @Test("traceparent: the caller's trace continues into the request's log line and the IdP's token request; a malformed one starts a new trace")
    func traceContext() async throws {
        let w = try await World()
        defer { w.stop() }
        let s = try await w.importSession(subject: "traced")
        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(s)/token"
        let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736", callerSpan = "00f067aa0ba902b7"
        try expectStatus(try await HTTP.request("POST", url, key: w.workerKey, json: ["force_refresh": true],
                                                headers: ["traceparent": "00-\(callerTrace)-\(callerSpan)-01"]), 200)
        try expectStatus(try await HTTP.request("POST", url, key: w.workerKey, json: ["min_ttl": 60],
                                                headers: ["traceparent": "00-\(callerTrace.uppercased())-\(callerSpan)-01"]), 200)
        let seen = try await HTTP.get(w.idp.issuer + "/stats?client_id=\(w.idpClientID)")["traceparents"] as? [String] ?? []
        let atIdP = try #require(seen.last { $0.hasPrefix("00-\(callerTrace)-") }, "the IdP saw \(seen)")
        let parts = atIdP.split(separator: "-").map(String.init)
        #expect(parts.count == 4 && parts[2] != callerSpan && parts[2].count == 16 && parts[3] == "01", "the broker's own span, the caller's flags: \(atIdP)")
        try await Task.sleep(for: .milliseconds(200))
        let lines = w.brokers[0].process.output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["body"] as? String == "request" && ($0["path"] as? String)?.hasSuffix("/token") == true }
        #expect(lines.contains { $0["trace_id"] as? String == callerTrace && $0["span_id"] as? String == parts[2] },
                "the request's log line names the trace and the span the IdP saw as parent")
        let fresh = try #require(lines.last)
        #expect((fresh["trace_id"] as? String).map { $0.count == 32 && $0 != callerTrace } == true, "upper-case hex is not a traceparent: a new trace")
    }

    @Test("configuration errors name the variable and exit 2")
    func configurationErrors() throws {
        let noKey = try runCommand("tokenbroker", ["serve"], env: ["DATABASE_URL": try TestEnv.databaseURL(), "TOKENBROKER_SEALING_KEYS": ""])
        #expect(noKey.status == 2 && noKey.err.contains("TOKENBROKER_SEALING_KEYS"))
        let badKey = try runCommand("tokenbroker", ["serve"], env: try env(["TOKENBROKER_SEALING_KEYS": "k1:c2hvcnQ="]))
        #expect(badKey.status == 2 && badKey.err.contains("not 32 bytes") && !badKey.err.contains("c2hvcnQ="))
        let badListen = try runCommand("tokenbroker", ["serve"], env: try env(["TOKENBROKER_LISTEN": "nowhere"]))
        #expect(badListen.status == 2 && badListen.err.contains("TOKENBROKER_LISTEN"))
        let badDB = try runCommand("tokenbroker", ["serve"], env: try env(["DATABASE_URL": "postgresql://nobody:hunter2@/nodb?host=/nonexistent"]))
        #expect(badDB.status == 1 && badDB.err.contains("cannot connect") && !badDB.err.contains("hunter2"))
    }

    @Test("apikey create prints only the key; health, readiness and metrics answer; a second instance on a used port exits 2")
    func cliAndHealth() async throws {
        // Migrated here, so that the test does not depend on another suite having run first.
        #expect(try runCommand("tokenbroker", ["migrate"], env: try env()).status == 0)
        let created = try runCommand("tokenbroker", ["apikey", "create", "--role", "operator", "--name", "ops", "--all-tenants"], env: try env())
        #expect(created.status == 0)
        let lines = created.out.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("tbk_") && lines[0].count == 64)
        TestEnv.secret(String(lines[0]))
        let b = try await BrokerServer(env: try env())
        defer { b.stop() }
        try expectStatus(try await HTTP.get(b.url + "/healthz"), 200)
        try expectStatus(try await HTTP.get(b.url + "/readyz"), 200)
        let metrics = try await HTTP.get(b.url + "/metrics")
        #expect(metrics.text.contains("# TYPE tokenbroker_token_requests_total counter"))
        #expect(metrics.text.contains("tokenbroker_retention_deleted_total{kind=\"ended_sessions\"} "))
        for name in ["tokenbroker_build_info{version=", "tokenbroker_db_pool_size ", "tokenbroker_db_pool_in_use ", "tokenbroker_db_pool_waiting ",
                     "process_cpu_seconds_total ", "process_open_fds ", "process_start_time_seconds "] {
            #expect(metrics.text.contains("\n" + name), "no \(name) in /metrics")
        }
        let rss = metrics.text.split(separator: "\n").first { $0.hasPrefix("process_resident_memory_bytes ") }
        #expect((rss.flatMap { Int($0.split(separator: " ")[1]) } ?? 0) > 1_000_000, "resident memory: \(String(describing: rss))")
        // The container HEALTHCHECK: no database, no keys, just the listener.
        let bare = ["DATABASE_URL": "", "TOKENBROKER_SEALING_KEYS": ""]
        let healthy = try runCommand("tokenbroker", ["health"], env: bare.merging(["TOKENBROKER_LISTEN": "0.0.0.0:\(b.port)"]) { $1 })
        #expect(healthy.status == 0 && healthy.out.contains("ok"), "\(healthy.err)")
        #expect(try runCommand("tokenbroker", ["health", "--ready", "--url", b.url], env: bare).status == 0)
        let down = try runCommand("tokenbroker", ["health", "--url", "http://127.0.0.1:\(TestEnv.freePort())"], env: bare)
        #expect(down.status == 1 && down.err.contains("no answer"))
        let unknown = try runCommand("tokenbroker", ["frobnicate"], env: try env())
        #expect(unknown.status == 2)
        // A second instance on the same port: exit 2 naming the address, not half the traffic.
        let second = Process()
        second.executableURL = TestEnv.binDir.appendingPathComponent("tokenbroker")
        second.arguments = ["serve"]
        second.environment = ProcessInfo.processInfo.environment.merging(try env(["TOKENBROKER_LISTEN": "127.0.0.1:\(b.port)"])) { $1 }
        let err = Pipe()
        second.standardError = err
        second.standardOutput = FileHandle.nullDevice
        try second.run()
        let deadline = Date().addingTimeInterval(10)
        while second.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if second.isRunning { second.terminate(); second.waitUntilExit() }
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(second.terminationStatus == 2 && said.contains("127.0.0.1:\(b.port)") && said.contains("already in use"), "\(said)")
        try expectStatus(try await HTTP.get(b.url + "/healthz"), 200)
    }

    @Test("the CLI is strict: unknown options, missing values and extra arguments are exit 2 with the usage; --help and --version need no configuration")
    func strictCLI() throws {
        let bare = ["DATABASE_URL": "", "TOKENBROKER_DATABASE_URL": "", "TOKENBROKER_SEALING_KEYS": ""]
        let version = try runCommand("tokenbroker", ["--version"], env: bare)
        #expect(version.status == 0 && version.out.hasPrefix("tokenbroker ") && version.err.isEmpty)
        let bogus = try runCommand("tokenbroker", ["frobnicate"], env: bare)
        #expect(bogus.status == 2 && bogus.err.contains("unknown command 'frobnicate'") && !bogus.err.contains("is not set"))
        for command in ["serve", "migrate", "tenant", "client", "apikey", "sealing-key", "signout", "routes", "purge", "health"] {
            for args in [[command, "--help"], [command, "put", "-h"]] {
                let help = try runCommand("tokenbroker", args, env: bare)
                #expect(help.status == 0 && help.out.contains("tokenbroker \(command)"), "\(args): \(help.err)")
            }
        }
        let refusals: [([String], String)] = [
            (["migrate", "--dry-run"], "unknown option --dry-run"),
            (["migrate", "now"], "unexpected argument 'now'"),
            (["tenant", "put", "t1", "--name"], "option --name needs a value"),
            (["tenant", "put", "t1", "--nmae", "T"], "unknown option --nmae"),
            (["apikey", "create", "--role", "worker", "--name", "w"], "--all-tenants"),
            (["apikey", "create", "--role", "worker", "--tenant", "t1", "--all-tenants"], "--all-tenants"),
            (["signout", "--tenant", "t1", "--subject", "alice", "--idle-sinse", "2026-01-01T00:00:00Z"], "unknown option --idle-sinse"),
            (["sealing-key", "generate", "--id"], "option --id needs a value"),
        ]
        for (args, message) in refusals {
            let r = try runCommand("tokenbroker", args, env: try env())
            #expect(r.status == 2 && r.err.contains(message), "\(args): \(r.status) \(r.err)")
            #expect(r.out.isEmpty, "\(args) printed \(r.out)")
        }
        // --config before the command reads the file as after it does (here: a value it refuses).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnv.uniqueName("cfg"))
        try "TOKENBROKER_CACHE_CAPACITY=1\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        for args in [["--config", file.path, "migrate", "status"], ["migrate", "status", "--config", file.path]] {
            let r = try runCommand("tokenbroker", args, env: try env())
            #expect(r.status == 2 && r.err.contains("TOKENBROKER_CACHE_CAPACITY"), "\(args): \(r.status) \(r.err)")
        }
    }

    @Test("SIGTERM stops the broker cleanly and flushes its audit trail, without running the C libraries' destructors under its threads")
    func gracefulShutdown() async throws {
        // The dynamic loader's trace (glibc's LD_DEBUG, one file per process) shows whether
        // exit ran the libraries' destructors: with exit(0), GnuTLS's freed its ASN.1 trees
        // while other threads ran on, and a broker crashed there in CI.
        let trace = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnv.uniqueName("ld"))
        let w = try await World(extraEnv: ["LD_DEBUG": "files", "LD_DEBUG_OUTPUT": trace.path])
        let session = try await w.importSession(subject: "zoe")
        try expectStatus(try await w.token(session), 200)
        let pid = w.brokers[0].process.process.processIdentifier
        w.brokers[0].process.stop(signal: SIGTERM)
        #expect(w.brokers[0].process.process.terminationStatus == 0)
        let traceFile = URL(fileURLWithPath: trace.path + ".\(pid)")
        let loader = (try? String(contentsOf: traceFile, encoding: .utf8)) ?? ""
        let lines = loader.split(separator: "\n")
        let initialised = lines.filter { $0.contains("calling init") }.count, finalised = lines.filter { $0.contains("calling fini") }.count
        #expect(initialised > 0, "the loader's trace is missing")
        #expect(finalised == 0, "libraries' destructors ran at exit")
        let dir = trace.deletingLastPathComponent()
        for f in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] where f.hasPrefix(trace.lastPathComponent) {
            try? FileManager.default.removeItem(at: dir.appendingPathComponent(f))
        }
        let audited = try runPSQL("SELECT coalesce(sum(count), 0) FROM audit_events WHERE tenant_id = '\(w.tenant)' AND action = 'token.issue' AND session_id = '\(session)'")
        #expect(Int(audited.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 >= 1)
        w.stop()
    }

    @Test("SIGTERM drains every listener at once: the ops listener stops while the internal one still waits for a refresh in flight")
    func listenersDrainTogether() async throws {
        let opsPort = TestEnv.freePort()
        let w = try await World(extraEnv: ["TOKENBROKER_OPS_LISTEN": "127.0.0.1:\(opsPort)"])
        defer { w.stop() }
        let health = "http://127.0.0.1:\(opsPort)/healthz"
        #expect(try await HTTP.get(health).status == 200)
        let id = try await w.importSession(subject: "drained", expiresIn: 30)
        try await w.idp.refreshFault("late", delayMS: 5_000)
        let waiting = Task { try? await w.token(id, body: ["min_ttl": 60]) }   // suspended: the IdP answers late
        while try await w.idp.presentations(client: w.idpClientID).presented == 0 { try await Task.sleep(for: .milliseconds(50)) }
        let broker = w.brokers[0].process
        kill(broker.process.processIdentifier, SIGTERM)
        // The ops listener has nothing suspended: it stops at once (503, then refused). Stopped one
        // after another, it went on answering 200 until the internal listener's request was done.
        let sent = Date()
        var status = 200
        while status == 200, Date().timeIntervalSince(sent) < 3 {
            status = (try? await HTTP.get(health).status) ?? 0
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(status != 200, "the ops listener still answered 3 s into the shutdown")
        #expect(broker.isRunning, "the shutdown did not wait for the request in flight")
        #expect(await waiting.value?.status == 200, "the request in flight was answered")
        broker.process.waitUntilExit()
        #expect(broker.process.terminationStatus == 0)
    }

    @Test("a second signal while the shutdown waits for a refresh in flight exits at once with status 1, running the shutdown only once")
    func secondSignalExits() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_LOCK_TIMEOUT_SECONDS": "9"])
        defer { w.stop() }
        let id = try await w.importSession(subject: "impatient", expiresIn: 30)
        try await w.idp.refreshFault("late", delayMS: 9_000)
        let waiting = Task { try? await w.token(id, body: ["min_ttl": 60]) }   // suspended: the IdP answers late
        while try await w.idp.presentations(client: w.idpClientID).presented == 0 { try await Task.sleep(for: .milliseconds(50)) }
        let broker = w.brokers[0].process
        kill(broker.process.processIdentifier, SIGTERM)   // the graceful stop now waits for that request
        try await Task.sleep(for: .milliseconds(500))
        #expect(broker.isRunning, "the shutdown did not wait for the request in flight")
        let sent = Date()
        kill(broker.process.processIdentifier, SIGINT)
        while broker.isRunning, Date().timeIntervalSince(sent) < 6 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!broker.isRunning && Date().timeIntervalSince(sent) < 3, "the second signal did not end the broker at once")
        broker.process.waitUntilExit()
        #expect(broker.process.terminationStatus == 1)
        let lines = broker.output.split(separator: "\n")
        #expect(lines.filter { $0.contains("\"shutting down\"") }.count == 1 && lines.contains { $0.contains("second signal during shutdown") })
        _ = await waiting.value
    }
}
