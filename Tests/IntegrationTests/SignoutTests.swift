import Foundation
import Testing

@Suite("Bulk sign-out jobs and the CLI for cron", .serialized)
struct SignoutTests {
    /// `n` sessions of real IdP grants, imported with a valid access token (no refresh needed).
    func sessions(_ w: World, _ n: Int, prefix: String = "user") async throws -> [String] {
        let subjects = (0..<n).map { "\(prefix)-\($0)" }
        let grants = try await w.idp.grants(client: w.idpClientID, subjects: subjects)
        let exp = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3000))
        return try await withThrowingTaskGroup(of: String.self) { group in
            var ids: [String] = []
            for (i, subject) in subjects.enumerated() {
                if i >= 16 { ids.append(try await group.next()!) }
                group.addTask {
                    let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, json: [
                        "client": w.client, "subject": subject, "refresh_token": grants[subject]!, "access_token": "at-" + subject, "expires_at": exp])
                    return try expectStatus(r, 201)["session_id"] as! String
                }
            }
            for try await id in group { ids.append(id) }
            return ids
        }
    }

    func signout(_ w: World, _ args: [String], replica: Int = 0) throws -> (status: Int32, out: String, err: String) {
        try runCommand("tokenbroker", ["signout", "--tenant", w.tenant] + args,
                       env: ["TOKENBROKER_URL": w.brokers[replica].url, "TOKENBROKER_API_KEY": w.workerKey])
    }

    func psqlInt(_ sql: String) throws -> Int { Int(try runPSQL(sql).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }

    @Test("a typo in a signout option is exit 2 and signs nothing out")
    func typoSignsNothingOut() async throws {
        let w = try await World()
        defer { w.stop() }
        let ids = try await sessions(w, 1, prefix: "typo")
        let r = try signout(w, ["--subject", "typo-0", "--idle-sinse", "2020-01-01T00:00:00Z", "--wait"])
        #expect(r.status == 2 && r.err.contains("unknown option --idle-sinse") && r.out.isEmpty)
        try expectStatus(try await w.token(ids[0]), 200)
        let jobs = try runPSQL("SELECT count(*) FROM signout_jobs WHERE tenant_id = '\(w.tenant)'")
        #expect(jobs.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("2,000 sessions, the broker SIGKILLed half-way and restarted: the job completes, all revoked at the IdP, counts exact, CLI agrees")
    func survivesSIGKILL() async throws {
        // The killed replica's claimed batch comes back when its lease (3 s here) runs out.
        let w = try await World(extraEnv: ["TOKENBROKER_SIGNOUT_RATE_PER_CLIENT": "400", "TOKENBROKER_SIGNOUT_LEASE_SECONDS": "3"])
        defer { w.stop() }
        let n = 2000
        _ = try await sessions(w, n)
        #expect(try await w.idp.counters(client: w.idpClientID)["active_families"] as? Int == n)
        let cli = Task.detached { try signout(w, ["--all", "--wait", "--timeout", "60"]) }
        // Half-way: kill the only replica without a chance to clean up, then start it again.
        let tenant = w.tenant
        let done = { try psqlInt("SELECT count(*) FROM signout_items WHERE tenant_id = '\(tenant)' AND state <> 'pending'") }
        while try done() < n / 2 { try await Task.sleep(for: .milliseconds(50)) }
        let port = w.brokers[0].port
        w.brokers[0].stop(signal: SIGKILL)
        #expect(try done() < n)    // it really died mid-job
        w.brokers[0] = try await BrokerServer(env: w.env, name: "broker0-restarted", port: port)

        let r = try await cli.value
        #expect(r.status == 0, "CLI exit status")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(summary["state"] as? String == "done" && summary["total"] as? Int == n && summary["revoked"] as? Int == n)
        #expect(summary["failed"] as? Int == 0 && summary["idp_pending"] as? Int == 0)
        #expect(try psqlInt("SELECT count(*) FROM sessions WHERE tenant_id = '\(tenant)' AND state <> 'revoked'") == 0)
        #expect(try await w.idp.counters(client: w.idpClientID)["active_families"] as? Int == 0)
        let job = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(tenant)/signouts/\(summary["job_id"] as! String)", key: w.workerKey)
        #expect(job["revoked"] as? Int == n && job["total"] as? Int == n, "\(job)")
    }

    @Test("filters, dry run, Idempotency-Key, and the CLI's exit codes")
    func filtersAndIdempotency() async throws {
        let w = try await World()
        defer { w.stop() }
        _ = try await sessions(w, 3, prefix: "keep")
        let target = try await sessions(w, 2, prefix: "go")
        let dry = try signout(w, ["--subject", "go-0", "--dry-run", "--wait"])
        #expect(dry.status == 0)
        let dryJob = try #require(try JSONSerialization.jsonObject(with: Data(dry.out.utf8)) as? [String: Any])
        #expect(dryJob["total"] as? Int == 1 && dryJob["revoked"] as? Int == 0 && dryJob["dry_run"] as? Bool == true)
        #expect(try psqlInt("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'revoked'") == 0)

        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/signouts"
        let a = try expectStatus(try await HTTP.request("POST", url, key: w.workerKey, json: ["subject": "go-1"], headers: ["Idempotency-Key": "k-1"]), 202)
        let b = try expectStatus(try await HTTP.request("POST", url, key: w.workerKey, json: ["subject": "go-1"], headers: ["Idempotency-Key": "k-1"]), 202)
        #expect(a["job_id"] as? String == b["job_id"] as? String)
        let c = try expectStatus(try await HTTP.request("POST", url, key: w.workerKey, json: ["subject": "keep-0"], headers: ["Idempotency-Key": "k-1"]), 409)
        #expect(c["error"] as? String == "idempotency_key_reused")
        // No criterion and no "all": refused, nothing queued.
        try expectStatus(try await HTTP.post(url, key: w.workerKey, json: [:]), 400)
        try expectStatus(try await HTTP.post(url, key: w.workerKey, json: ["all": true, "subject": "x"]), 400)
        try expectStatus(try await HTTP.post(url, key: w.workerKey, json: ["client": "nope"]), 404)

        let real = try signout(w, ["--subject", "go-0", "--wait"])
        #expect(real.status == 0)
        let states = try runPSQL("SELECT subject || ':' || state FROM sessions WHERE tenant_id = '\(w.tenant)' ORDER BY subject")
        #expect(states.split(separator: "\n").filter { $0.hasSuffix(":revoked") }.count >= 1)
        #expect(states.contains("keep-0:active") && states.contains("go-0:revoked"))
        _ = target
        // Could not run: no key, or a bad one.
        #expect(try runCommand("tokenbroker", ["signout", "--tenant", w.tenant, "--all"], env: ["TOKENBROKER_URL": w.brokers[0].url, "TOKENBROKER_API_KEY": ""]).status == 2)
        #expect(try runCommand("tokenbroker", ["signout", "--tenant", w.tenant, "--all"],
                               env: ["TOKENBROKER_URL": w.brokers[0].url, "TOKENBROKER_API_KEY": "tbk_0123456789abcdef_" + String(repeating: "A", count: 43)]).status == 2)
    }

    @Test("some sessions not confirmed at the IdP: exit status 3, and the summary says so")
    func partialFailure() async throws {
        let w = try await World()
        defer { w.stop() }
        _ = try await sessions(w, 3)
        try await w.idp.fail(status: 503, retryAfter: 3600, count: 1000, endpoint: "revoke")
        let r = try signout(w, ["--all", "--wait", "--idp-wait", "2"])
        #expect(r.status == 3)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(summary["revoked"] as? Int == 3 && summary["idp_pending"] as? Int == 3, "\(r.out) \(r.err)")
        try expectStatus(try await w.token(try #require(try runPSQL("SELECT id FROM sessions WHERE tenant_id = '\(w.tenant)' LIMIT 1")
            .split(separator: "\n").first.map(String.init))), 409)
    }

    @Test("an issuer without a revocation_endpoint: a bulk sign-out counts its sessions done (exit 0, none failed, none pending at the IdP), the outbox stays empty")
    func revocationUnsupported() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(revocation: false)
        _ = try await sessions(w, 3)
        let r = try signout(w, ["--all", "--wait", "--idp-wait", "2"])
        #expect(r.status == 0, "\(r.out) \(r.err)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(summary["revoked"] as? Int == 3 && summary["failed"] as? Int == 0 && summary["idp_pending"] as? Int == 0, "\(r.out)")
        #expect(try psqlInt("SELECT count(*) FROM revocation_outbox WHERE tenant_id = '\(w.tenant)'") == 0)
    }

    @Test("an admin of tenant B cannot start or read tenant A's sign-outs")
    func crossTenant() async throws {
        let w = try await World()
        defer { w.stop() }
        _ = try await sessions(w, 1)
        let job = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/signouts", key: w.workerKey, json: ["all": true, "dry_run": true]), 202)
        let other = TestEnv.uniqueName("t")
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(other)", key: w.operatorKey, json: ["name": "B"]), 201)
        let keyB = try await w.newKey(roles: ["admin"], tenants: [other])
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/signouts", key: keyB, json: ["all": true]), 404)
        let jobID = job["job_id"] as! String
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/signouts/\(jobID)", key: keyB), 404)
        // Asked within its own tenant, B's admin does not find A's job either: the job is read within the tenant.
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(other)/signouts/\(jobID)", key: keyB), 404)
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/signouts/\(jobID)", key: w.workerKey), 200)
        #expect(try psqlInt("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'revoked'") == 0)
    }
}
