import BrokerCore
import Foundation
import Synchronization
import Testing

/// End-to-end runs of the refresh engine with real processes and real time: the few tests that
/// let time pass, since what they prove is what happens across refresh cycles.
@Suite("Refresh engine across replicas", .serialized)
struct RefreshEngineTests {
    static let lifetime = 4          // seconds an access token lives at the dev IdP in these runs
    static let engineEnv = ["TOKENBROKER_REFRESH_TICK_MS": "50"]

    /// Signs `count` users in and imports their grants, a few at a time.
    func importSessions(_ w: World, count: Int, prefix: String) async throws -> [String: String] {
        try await withThrowingTaskGroup(of: (String, String).self) { g in
            var out: [String: String] = [:]
            for i in 0..<count {
                if i >= 16, let (s, id) = try await g.next() { out[s] = id }
                g.addTask { ("\(prefix)-\(i)", try await w.importSession(subject: "\(prefix)-\(i)", expiresIn: TimeInterval(Self.lifetime))) }
            }
            for try await (s, id) in g { out[s] = id }
            return out
        }
    }

    /// Fetches tokens from the live replicas until `until`, and records any token handed out
    /// after its expiry (the JWT's own `exp`, so no rounding hides it).
    func workers(_ w: World, sessions: [String], replicas: @escaping @Sendable () -> [Int], until: Date) async -> (fetched: Int, expired: Int) {
        final class Tally: Sendable {
            let fetched = Atomic<Int>(0), expired = Atomic<Int>(0)
        }
        let tally = Tally()
        await withTaskGroup(of: Void.self) { g in
            for _ in 0..<4 {
                g.addTask {
                    while Date() < until {
                        guard let s = sessions.randomElement(), let r = replicas().randomElement(),
                              let reply = try? await w.token(s, replica: r, body: ["min_ttl": 0]) else { continue }
                        let received = Date().timeIntervalSince1970
                        if reply.status == 200, let at = reply["access_token"] as? String {
                            tally.fetched.add(1, ordering: .relaxed)
                            if let exp = Self.expiry(of: at), Double(exp) < received.rounded(.down) { tally.expired.add(1, ordering: .relaxed) }
                        }
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                }
            }
        }
        return (tally.fetched.load(ordering: .relaxed), tally.expired.load(ordering: .relaxed))
    }

    static func expiry(of jwt: String) -> Int? {
        let parts = jwt.split(separator: ".")
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])),
              let claims = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else { return nil }
        return (claims["exp"] as? NSNumber)?.intValue
    }

    /// Every session active, no reuse at the IdP, and per session: at least `cycles` refreshes,
    /// never two within half a token's lifetime (one refresh per session per cycle).
    func expectHealthy(_ w: World, _ sessions: [String: String], cycles: Int, except revoked: Set<String> = []) async throws {
        let stats = try await w.idp.stats(client: w.idpClientID)
        #expect(stats.reuseDetected == 0, "a refresh token was presented twice")
        for subject in sessions.keys where !revoked.contains(subject) {
            let times = (stats.refreshTimes[subject] ?? []).sorted()
            #expect(times.count >= cycles, "\(subject) refreshed \(times.count) times")
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            #expect(gaps.allSatisfy { $0 >= Double(Self.lifetime) / 2 - 0.3 }, "\(subject) refreshed twice in one cycle: \(gaps)")
        }
        let states = try runPSQL("SELECT subject || ':' || state FROM sessions WHERE tenant_id = '\(w.tenant)'")
            .split(separator: "\n").map(String.init)
        let inactive = states.filter { !$0.hasSuffix(":active") }.map { String($0.split(separator: ":")[0]) }
        #expect(Set(inactive) == revoked, "sessions not active: \(inactive.prefix(5))")
    }

    @Test("three replicas, 200 sessions living 4 s, several cycles: one refresh per session per cycle, none expired")
    func threeReplicasKeepSessionsFresh() async throws {
        let w = try await World(replicas: 3, accessTTL: Self.lifetime, extraEnv: Self.engineEnv)
        defer { w.stop() }
        let sessions = try await importSessions(w, count: 200, prefix: "u")
        let run = await workers(w, sessions: Array(sessions.values), replicas: { [0, 1, 2] }, until: Date().addingTimeInterval(10))
        #expect(run.fetched > 100)
        #expect(run.expired == 0, "access tokens handed out after their expiry")
        try await expectHealthy(w, sessions, cycles: 2)
    }

    @Test("a replica killed with SIGKILL mid-run loses nothing: the others keep its sessions fresh")
    func killedReplicaLosesNothing() async throws {
        let w = try await World(replicas: 3, accessTTL: Self.lifetime, extraEnv: Self.engineEnv)
        defer { w.stop() }
        let sessions = try await importSessions(w, count: 100, prefix: "k")
        final class Live: Sendable { let replicas = Mutex<[Int]>([0, 1, 2]) }
        let live = Live()
        Task {
            try? await Task.sleep(for: .seconds(4))
            live.replicas.withLock { $0 = [1, 2] }
            w.brokers[0].stop(signal: SIGKILL)
        }
        let run = await workers(w, sessions: Array(sessions.values), replicas: { live.replicas.withLock { $0 } }, until: Date().addingTimeInterval(11))
        #expect(!w.brokers[0].process.isRunning)
        #expect(run.expired == 0)
        try await expectHealthy(w, sessions, cycles: 2)
    }

    @Test("an IdP answering 503 with Retry-After, then recovering: sessions recover without a duplicate refresh")
    func idpOutageRecovers() async throws {
        let w = try await World(replicas: 2, accessTTL: Self.lifetime, extraEnv: Self.engineEnv)
        defer { w.stop() }
        let sessions = try await importSessions(w, count: 20, prefix: "o")
        try await Task.sleep(for: .seconds(2))
        // Each replica's circuit lets one call through per Retry-After: five failures last ~3 s.
        try await w.idp.fail(status: 503, retryAfter: 1, count: 5)
        let run = await workers(w, sessions: Array(sessions.values), replicas: { [0, 1] }, until: Date().addingTimeInterval(12))
        #expect(run.expired == 0)
        let metrics = try await HTTP.get(w.brokers[0].url + "/metrics").text + (try await HTTP.get(w.brokers[1].url + "/metrics").text)
        #expect(metrics.contains("tokenbroker_refreshes_total{outcome=\"failed\",tenant="), "the outage was seen")
        try await expectHealthy(w, sessions, cycles: 2)
    }

    @Test("invalid_grant for one session makes it alone needs_reauth")
    func invalidGrantIsolated() async throws {
        let w = try await World(replicas: 2, accessTTL: Self.lifetime, extraEnv: Self.engineEnv)
        defer { w.stop() }
        let sessions = try await importSessions(w, count: 10, prefix: "g")
        try await w.idp.revokeSubject("g-3")
        try await Task.sleep(for: .seconds(9))
        try await expectHealthy(w, sessions, cycles: 2, except: ["g-3"])
        let refused = try await w.token(sessions["g-3"]!, replica: 1)
        #expect(refused.status == 409 && refused["error"] as? String == "needs_reauth")
        let audited = try runPSQL("SELECT count(*) FROM audit_events WHERE tenant_id = '\(w.tenant)' AND session_id = '\(sessions["g-3"]!)' AND action = 'session.refresh' AND outcome = 'needs_reauth'")
        #expect((Int(audited.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 1)
    }
}
