import BrokerCore
import Foundation
import Synchronization
import Testing

/// Faults of the broker's own processes and of PostgreSQL around a refresh, and what
/// workers are handed meanwhile — with real processes and bounded timelines.
@Suite("Refresh faults of processes", .serialized)
struct RefreshProcessFaultTests {

    /// Counts shared by the polling tasks.
    final class Tally: Sendable {
        let handed = Atomic<Int>(0), bad = Atomic<Int>(0), overstated = Atomic<Int>(0)
    }

    func clearFault(_ w: World) async throws {
        _ = try await HTTP.post(w.idp.issuer + "/admin/refresh-fault", json: ["mode": NSNull()])
    }

    func count(_ sql: String) throws -> Int { Int(try runPSQL(sql).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }

    @Test("a replica SIGKILLed while its IdP calls are in flight: no reuse; every session active or needs_reauth with a reason, none stuck")
    func replicaKilledMidCall() async throws {
        let w = try await World(replicas: 3, extraEnv: ["TOKENBROKER_REFRESH_PATIENCE_SECONDS": "4", "TOKENBROKER_LOCK_TIMEOUT_SECONDS": "12"])
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<20 { ids.append(try await w.importSession(subject: "k\(i)", expiresIn: 30)) }
        try await w.idp.refreshFault("late", delayMS: 3_000, count: 1_000)
        let all = ids
        let doomed = Task {
            await withTaskGroup(of: Void.self) { g in
                for id in all { g.addTask { _ = try? await w.token(id, replica: 0, body: ["min_ttl": 60]) } }
            }
        }
        try await Task.sleep(for: .milliseconds(1_500))   // replica 0's refreshes are out, the IdP has rotated
        w.brokers[0].stop(signal: SIGKILL)
        // Not cancelled: cancelling a URLSession task mid-flight can crash FoundationNetworking
        // on Linux (TaskRegistry); the requests to the dead replica fail on their own at once.
        _ = await doomed.value
        try await clearFault(w)
        // Other replicas find the attempts, wait out the dead owner's patience, and resolve them
        // by introspection — never by presenting the tokens again.
        try await withThrowingTaskGroup(of: Void.self) { g in
            for id in all { g.addTask { _ = try await w.token(id, replica: 1 + Int.random(in: 0...1), body: ["min_ttl": 60]) } }
            try await g.waitForAll()
        }
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.reuse == 0)
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'active' AND attempt_id IS NOT NULL") == 0)
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state <> 'active' AND reason IS NULL") == 0)
        // The killed replica's calls had reached the IdP (which rotated): those sessions were
        // resolved by introspection, not by presenting their old tokens.
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND reason = 'refresh_outcome_lost'") >= 1)
    }

    @Test("PostgreSQL stopped between the IdP's answer and the COMMIT: the answers are written when it returns; no reuse, sessions active",
          .enabled(if: pgControl != nil))
    func databaseDownAtCommit() async throws {
        let w = try await World()
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<10 { ids.append(try await w.importSession(subject: "p\(i)", expiresIn: 30)) }
        try await w.idp.refreshFault("late", delayMS: 2_500, count: 10)
        let all = ids
        let callers = Task { try await withThrowingTaskGroup(of: Void.self) { g in
            for id in all { g.addTask { _ = try? await w.token(id, body: ["min_ttl": 60]) } }
            try await g.waitForAll()
        } }
        try await Task.sleep(for: .milliseconds(1_000))   // attempts committed, calls out
        let control = try #require(pgControl)
        #expect(try shell(control, "stop") == 0)
        try await Task.sleep(for: .milliseconds(3_500))   // the IdP answered; the writes fail
        #expect(try shell(control, "start") == 0)
        _ = try? await callers.value
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, (try? count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND attempt_id IS NOT NULL")) != 0 {
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'active' AND attempt_id IS NULL") == 10)
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 10 && p.reuse == 0)
        for id in all { try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200) }
    }

    @Test("an IdP that kills the old access token at rotation, three replicas polling: no token handed out after the IdP killed it")
    func noSupersededToken() async throws {
        let w = try await World(replicas: 3, accessTTL: 5)
        defer { w.stop() }
        try await w.idp.settings(killOldAccessTokens: true)
        var ids: [String] = []
        for i in 0..<6 { ids.append(try await w.importSession(subject: "d\(i)", expiresIn: 5)) }
        let all = ids
        let tally = Tally()
        let end = Date().addingTimeInterval(15)
        try await withThrowingTaskGroup(of: Void.self) { g in
            for poller in 0..<6 {
                g.addTask {
                    while Date() < end {
                        let sent = Date()
                        let r = try await w.token(all[Int.random(in: 0..<all.count)], replica: poller % 3, body: ["min_ttl": 1])
                        guard r.status == 200, let at = r["access_token"] as? String else { continue }
                        tally.handed.add(1, ordering: .relaxed)
                        let i = try await w.idp.introspection(at, client: w.idpClientID, secret: w.idpSecret)
                        // Dead when handed out: killed before the request was even sent.
                        if let killed = i["killed_at"] as? Double, killed < sent.timeIntervalSince1970 { tally.bad.add(1, ordering: .relaxed) }
                    }
                }
            }
            try await g.waitForAll()
        }
        #expect(tally.handed.load(ordering: .relaxed) > 200)
        #expect(tally.bad.load(ordering: .relaxed) == 0, "dead tokens handed out: \(tally.bad.load(ordering: .relaxed))")
        #expect(try await w.idp.presentations(client: w.idpClientID).reuse == 0)
    }

    @Test("three minutes of 4 s tokens on two replicas: every hand-out has min_ttl (and ≥ 1 s) of real life by the IdP's own exp")
    func honestExpiry() async throws {
        let w = try await World(replicas: 2, accessTTL: 4)
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<8 { ids.append(try await w.importSession(subject: "h\(i)", expiresIn: 4)) }
        let all = ids
        let tally = Tally()
        let end = Date().addingTimeInterval(180)
        try await withThrowingTaskGroup(of: Void.self) { g in
            for poller in 0..<4 {
                g.addTask {
                    while Date() < end {
                        let minTTL = [0, 1, 2][Int.random(in: 0...2)]
                        let r = try await w.token(all[Int.random(in: 0..<all.count)], replica: poller % 2,
                                                  body: minTTL == 0 ? [:] : ["min_ttl": minTTL])
                        let received = Date().timeIntervalSince1970
                        guard r.status == 200, let at = r["access_token"] as? String, let exp = RefreshEngineTests.expiry(of: at),
                              let shown = (r["expires_at"] as? String).flatMap(Self.instant) else { continue }
                        tally.handed.add(1, ordering: .relaxed)
                        // The IdP's exp is whole seconds; the answer took a little while to arrive
                        // (a quarter second allowed for the trip on two busy cores; the faults
                        // this catches — expiry counted from the end of the IdP call, whole-second
                        // rounding — cost up to a second).
                        if Double(exp) - received < Double(max(minTTL, 1)) - 0.25 { tally.bad.add(1, ordering: .relaxed) }
                        if shown > Double(exp) + 0.001 { tally.overstated.add(1, ordering: .relaxed) }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
            }
            try await g.waitForAll()
        }
        #expect(tally.handed.load(ordering: .relaxed) > 1_000)
        #expect(tally.bad.load(ordering: .relaxed) == 0, "hand-outs with less life than asked: \(tally.bad.load(ordering: .relaxed))")
        #expect(tally.overstated.load(ordering: .relaxed) == 0, "expires_at later than the token's exp: \(tally.overstated.load(ordering: .relaxed))")
    }

    @Test("refused connections: backoff and the client circuit keep the broker's attempts few")
    func refusedConnections() async throws {
        let w = try await World()
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<10 { ids.append(try await w.importSession(subject: "r\(i)", expiresIn: 30)) }
        try expectStatus(try await w.token(ids[0], body: ["force_refresh": true]), 200)   // metadata cached
        w.idp.process.stop()
        try expectStatus(try await w.token(ids[1], body: ["min_ttl": 60]), 503)
        let all = Array(ids.dropFirst())   // the first one holds a fresh token
        let end = Date().addingTimeInterval(10)
        try await withThrowingTaskGroup(of: Void.self) { g in
            for c in 0..<all.count {
                g.addTask {
                    while Date() < end {
                        #expect(try await w.token(all[c], body: ["min_ttl": 60]).status == 503)
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
            try await g.waitForAll()
        }
        let metrics = try await HTTP.get(w.brokers[0].url + "/metrics").text
        // One series per client: this test has one.
        let failed = metrics.split(separator: "\n").first { $0.hasPrefix("tokenbroker_refreshes_total{outcome=\"failed\",tenant=") }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
        // One call per circuit opening: 1, 2, 4, 8 s apart — about five in 11 s, not hundreds.
        #expect(failed >= 2 && failed <= 7, "failed attempts: \(failed)")
    }

    static func instant(_ s: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s)?.timeIntervalSince1970
    }
}
