import Foundation
import Synchronization
import Testing

/// Broker replicas on a real HA engine: the two-node Patroni cluster `make test` starts
/// (scripts/patroni.sh), reached through a multi-host DATABASE_URL with
/// `target_session_attrs=read-write` (libpq's own failover), under a refresh storm and worker
/// traffic while the primary's postmaster is SIGKILLed and Patroni promotes the standby.
@Suite("Failover on Patroni", .serialized,
       .enabled(if: Patroni.url != nil, "make test starts a Patroni cluster (TOKENBROKER_TEST_PATRONI_URL)"))
struct PatroniFailoverTests {
    /// What the workers saw, shared by the polling tasks.
    final class Tally: Sendable {
        let handed = Atomic<Int>(0), unavailable = Atomic<Int>(0), other = Atomic<Int>(0), inactive = Atomic<Int>(0)
        let otherCodes = Mutex<[String]>([])
    }

    func count(_ sql: String) throws -> Int {
        Int(try runPSQL(sql, url: try #require(Patroni.url)).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Sessions with 6-s access tokens at the IdP, refreshed by the engines of three replicas,
    /// and six workers asking any replica for tokens with a second of life at least.
    func storm(sessions n: Int) async throws -> (World, [String]) {
        let w = try await World(replicas: 3, accessTTL: 6, extraEnv: ["DATABASE_URL": try #require(Patroni.url)])
        var ids: [String] = []
        for i in 0..<n { ids.append(try await w.importSession(subject: "f\(i)", expiresIn: Double(2 + i % 5))) }
        return (w, ids)
    }

    /// Workers polling until `end`; every tenth token handed out is checked at the IdP.
    func workers(_ w: World, _ ids: [String], until end: Date, tally: Tally) -> Task<Void, Never> {
        Task {
            await withTaskGroup(of: Void.self) { g in
                for worker in 0..<6 {
                    g.addTask {
                        while Date() < end {
                            guard let r = try? await w.token(ids[Int.random(in: 0..<ids.count)], replica: worker % 3, body: ["min_ttl": 1]) else { continue }
                            switch r.status {
                            case 200:
                                if tally.handed.add(1, ordering: .relaxed).newValue % 10 == 0, let at = r["access_token"] as? String,
                                   let i = try? await w.idp.introspection(at, client: w.idpClientID, secret: w.idpSecret), i["active"] as? Bool != true {
                                    tally.inactive.add(1, ordering: .relaxed)
                                }
                            case 503: tally.unavailable.add(1, ordering: .relaxed); try? await Task.sleep(for: .milliseconds(50))
                            default:
                                tally.other.add(1, ordering: .relaxed)
                                tally.otherCodes.withLock { $0.append("\(r.status) \(r["error"] as? String ?? "")") }
                            }
                        }
                    }
                }
            }
        }
    }

    /// When the standby was seen accepting writes, shared with the tasks that wait for it.
    final class Promotion: Sendable {
        let at = Mutex<Date?>(nil)
    }

    /// When each replica first had `write` succeed after the promotion (tried every 100 ms):
    /// until the old primary's backends notice that their postmaster died, a write can still
    /// commit there.
    func firstAfterPromotion(_ promotion: Promotion, until end: Date, _ write: @escaping @Sendable (Int) async -> Bool) -> Task<[Date?], Never> {
        Task {
            await withTaskGroup(of: (Int, Date?).self) { g in
                for r in 0..<3 {
                    g.addTask {
                        while Date() < end {
                            if await write(r), let promoted = promotion.at.withLock({ $0 }), Date() > promoted { return (r, Date()) }
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                        return (r, nil)
                    }
                }
                var firsts = [Date?](repeating: nil, count: 3)
                for await (r, at) in g { firsts[r] = at }
                return firsts
            }
        }
    }

    /// Polls until the node on `port` accepts writes (bounded): when it first did.
    func promoted(port: String, within seconds: Double) async -> Date? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if Patroni.acceptsWrites(port: port) { return Date() }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    @Test("synchronous replication, the primary SIGKILLed under a refresh storm: no refresh token presented twice, no session lost, no expired token handed out, every replica writing within 2 s of the promotion, a revocation after it everywhere within 1 s")
    func synchronousFailover() async throws {
        try Patroni.run("mode", "sync")
        let (w, ids) = try await storm(sessions: 40)
        defer { w.stop() }
        var mine: [String] = []
        for r in 0..<3 { mine.append(try await w.importSession(subject: "writer-\(r)")) }
        let own = mine
        let tally = Tally()
        let end = Date().addingTimeInterval(18)
        let polling = workers(w, ids, until: end, tally: tally)
        try await Task.sleep(for: .seconds(4))   // the storm runs: rotations in every engine
        let before = try await w.idp.presentations(client: w.idpClientID)
        #expect(before.presented > 0 && before.reuse == 0)

        let standby = try Patroni.run("standby")
        let killedAt = Date()
        try Patroni.run("kill-primary")
        let promotion = Promotion()
        // Writes: the tenant's registration, written again by each replica. Refreshes: each
        // replica forces one of a session of its own; after a change of database server they
        // are held for TOKENBROKER_FAILOVER_HOLD_SECONDS (5) while replicas re-apply their journals.
        let writes = firstAfterPromotion(promotion, until: killedAt.addingTimeInterval(25)) { r in
            (try? await HTTP.put(w.brokers[r].url + "/v1/tenants/\(w.tenant)", key: w.operatorKey, json: ["name": "Test tenant"]))?.status == 200
        }
        let refreshes = firstAfterPromotion(promotion, until: killedAt.addingTimeInterval(25)) { r in
            (try? await w.token(own[r], replica: r, body: ["min_ttl": 1, "force_refresh": true]))?.status == 200
        }
        let promotedAt = try #require(await promoted(port: standby, within: 20), "Patroni promoted nobody within 20 s")
        promotion.at.withLock { $0 = promotedAt }
        let firsts = await writes.value, refreshed = await refreshes.value
        for r in 0..<3 {
            let wrote = try #require(firsts[r], "replica \(r) wrote nothing within 25 s of the kill")
            #expect(wrote.timeIntervalSince(promotedAt) <= 2, "replica \(r) wrote again \(wrote.timeIntervalSince(promotedAt)) s after the promotion")
            let rotated = try #require(refreshed[r], "replica \(r) refreshed nothing within 25 s of the kill")
            #expect(rotated.timeIntervalSince(promotedAt) <= 5 + 2, "replica \(r) refreshed again \(rotated.timeIntervalSince(promotedAt)) s after the promotion")
        }

        // A revocation made after the failover reaches every replica within a second.
        let revoked = try await w.importSession(subject: "revoked-after")
        for r in 0..<3 { try expectStatus(try await w.token(revoked, replica: r, body: ["min_ttl": 1]), 200) }
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(revoked)", key: w.workerKey), 200)
        let revokedAt = Date()
        for r in 1..<3 {
            while try await w.token(revoked, replica: r, body: ["min_ttl": 1]).status == 200 {
                if Date().timeIntervalSince(revokedAt) > 1 { Issue.record("replica \(r) still hands out the revoked session's token after 1 s"); break }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        await polling.value
        // Every session's stored refresh token is the live one: each presented once more, none refused.
        for id in ids + own { try expectStatus(try await w.token(id, body: ["min_ttl": 1, "force_refresh": true]), 200) }
        let after = try await w.idp.presentations(client: w.idpClientID)
        #expect(after.reuse == 0, "refresh tokens presented twice: \(after.reuse)")
        #expect(after.presented > before.presented)
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'needs_reauth'") == 0)
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'active'") == ids.count + own.count)
        #expect(tally.inactive.load(ordering: .relaxed) == 0, "tokens handed out that the IdP no longer knew as active")
        #expect(tally.other.load(ordering: .relaxed) == 0, "\(tally.otherCodes.withLock { Array($0.prefix(5)) })")
        #expect(tally.handed.load(ordering: .relaxed) > 100)
        // Each replica's change feed followed: it listened again on the new primary and counted
        // as alive only once a canary came back there.
        for b in w.brokers {
            let lines = b.process.output.split(separator: "\n")
            let reconnected = lines.firstIndex { $0.contains("\"code\":\"change_feed_reconnected\"") }
            let alive = lines.lastIndex { $0.contains("\"code\":\"change_feed_alive\"") }
            #expect(reconnected != nil && alive != nil && alive! > reconnected!, "the change feed did not listen again, or no canary came back")
            #expect(try await HTTP.get(b.url + "/metrics").text.contains("\ntokenbroker_change_feed_alive 1\n"))
        }
        let since = { (d: [Date?]) in String(format: "%.2f", (d.compactMap { $0 }.max() ?? promotedAt).timeIntervalSince(killedAt)) }
        print("failover: promoted \(String(format: "%.2f", promotedAt.timeIntervalSince(killedAt))) s after the kill, every replica writing after \(since(firsts)) s, "
              + "refreshing after \(since(refreshed)) s; \(tally.unavailable.load(ordering: .relaxed)) × 503, \(tally.handed.load(ordering: .relaxed)) tokens handed out")
        try Patroni.run("wait", "30")   // the old primary rejoined as a standby: ready for the next test
    }

    /// Each session's version on the node on `port` (read-only is enough: a hot standby answers).
    func versions(_ w: World, port: String) throws -> [String: Int] {
        let out = try runPSQL("SELECT id || ' ' || version FROM sessions WHERE tenant_id = '\(w.tenant)'", url: try Patroni.nodeURL(port: port))
        var v: [String: Int] = [:]
        for line in out.split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 2, let n = Int(f[1]) { v[String(f[0])] = n }
        }
        return v
    }

    @Test("asynchronous replication, WAL shipping frozen while rotations are in flight, then the primary SIGKILLed: every rotation the new primary lacked is re-applied; no spent refresh token presented, no needs_reauth, nothing revoked as orphaned")
    func asynchronousLossyFailover() async throws {
        try Patroni.run("mode", "async")
        defer { _ = try? Patroni.run("thaw-wal"); _ = try? Patroni.run("mode", "sync") }
        let (w, ids) = try await storm(sessions: 40)
        defer { w.stop() }
        let tally = Tally()
        let end = Date().addingTimeInterval(16)
        let polling = workers(w, ids, until: end, tally: tally)
        try await Task.sleep(for: .seconds(3))   // the storm runs, shipped to the standby
        let primary = try Patroni.run("primary"), standby = try Patroni.run("standby")
        let shipped = try versions(w, port: primary)
        try Patroni.run("freeze-wal")
        let frozenAt = try await w.idp.presentations(client: w.idpClientID)
        try await Task.sleep(for: .seconds(3))   // rotations committed on the primary only
        let committed = try versions(w, port: primary)
        let killing = try await w.idp.presentations(client: w.idpClientID)
        print("WAL shipping frozen 3 s: \(killing.presented - frozenAt.presented) refresh tokens presented meanwhile, "
              + "\(committed.filter { shipped[$0.key] != $0.value }.count) sessions written on the primary")
        try Patroni.run("kill-primary")
        let killedAt = Date()
        let kept = try versions(w, port: standby) // what the promoted standby will hold: nothing more arrives
        let lacked = committed.filter { id, v in (kept[id] ?? 0) < v }
        #expect(!lacked.isEmpty, "the freeze lost no rotation: the scenario proves nothing")
        let promotedAt = try #require(await promoted(port: standby, within: 20), "Patroni promoted nobody within 20 s")
        // Only now may the dead primary's walsenders go on (and exit): earlier, they would still
        // ship what they held to the standby.
        try Patroni.run("thaw-wal")
        await polling.value

        // Every session presented once more: a stored token the IdP had replaced is refused.
        var refused = 0
        for id in ids where try await w.token(id, body: ["min_ttl": 1, "force_refresh": true]).status != 200 { refused += 1 }
        #expect(refused == 0, "sessions refused after the failover: \(refused) of \(ids.count)")
        let after = try versions(w, port: standby)
        let behind = lacked.filter { id, v in (after[id] ?? 0) <= v }.count
        #expect(behind == 0, "sessions still behind the version their replica committed: \(behind) of \(lacked.count)")
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.reuse == 0, "spent refresh tokens presented to the IdP: \(p.reuse)")
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'needs_reauth'") == 0)
        #expect(try count("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state = 'active'") == ids.count)
        #expect(tally.inactive.load(ordering: .relaxed) == 0, "tokens handed out that the IdP no longer knew as active")
        var reapplied = 0
        for b in w.brokers {
            let lines = b.process.output.split(separator: "\n")
            #expect(!lines.contains { $0.contains("\"code\":\"refresh_orphaned\"") }, "a received token was revoked as orphaned")
            reapplied += lines.filter { $0.contains("\"code\":\"refresh_reapplied\"") }.count
        }
        #expect(reapplied >= lacked.count, "rotations re-applied: \(reapplied) of \(lacked.count) the new primary lacked")
        print("lossy failover: promoted \(String(format: "%.2f", promotedAt.timeIntervalSince(killedAt))) s after the kill; the new primary lacked \(lacked.count) rotations of \(committed.count) sessions; \(reapplied) re-applied; \(p.reuse) refresh tokens presented twice; \(refused) sessions refused afterwards")
        try Patroni.run("wait", "40")
    }
}
