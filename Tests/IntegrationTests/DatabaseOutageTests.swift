import Foundation
import Testing

/// PostgreSQL stopped under a running replica for a few seconds, as a failover does: what the
/// workers are answered meanwhile, and what the replica's log says of it.
@Suite("A database outage", .serialized)
struct DatabaseOutageTests {
    /// The replica's JSON log lines, parsed.
    static func lines(_ b: BrokerServer) -> [[String: Any]] {
        b.process.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test("three seconds without PostgreSQL: 503 store_unavailable with Retry-After, held tokens still handed out; one WARN line for every loop's failures, one INFO line at its end",
          .enabled(if: pgControl != nil))
    func outageLoggedOnce() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "outage")
        let broker = w.brokers[0]
        try expectStatus(try await w.token(session), 200)   // now held in memory
        let before = Self.lines(broker).count
        let control = try #require(pgControl)
        #expect(try shell(control, "stop") == 0)
        var stopped = true
        defer { if stopped { _ = try? shell(control, "start") } }
        let down = Date()
        // An unknown session is read from the database: it cannot be answered from memory.
        let unknown = try await HTTP.post(broker.url + "/v1/tenants/\(w.tenant)/sessions/ses_unknown/token", key: w.workerKey, json: ["min_ttl": 60])
        #expect(unknown.status == 503 && unknown["error"] as? String == "store_unavailable")
        #expect(unknown.headers["retry-after"] == "2")
        // A token held in memory is still handed out (within TOKENBROKER_CACHE_MAX_AGE_SECONDS).
        try expectStatus(try await w.token(session), 200)
        try await Task.sleep(for: .milliseconds(max(0, Int(3_000 - Date().timeIntervalSince(down) * 1000))))
        #expect(try shell(control, "start") == 0)
        stopped = false
        // Back: the recovery line within a bound, and the session served again.
        let deadline = Date().addingTimeInterval(15)
        var ended: [String: Any]?
        while Date() < deadline, ended == nil {
            ended = Self.lines(broker).dropFirst(before).first { $0["code"] as? String == "store_available" }
            if ended == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        let during = Self.lines(broker).dropFirst(before)
        let recovered = try #require(ended, "no store_available line within 15 s of PostgreSQL's start")
        #expect(recovered["severity_text"] as? String == "INFO")
        #expect((recovered["failures"] as? Int ?? 0) >= 2, "\(recovered)")
        #expect((recovered["seconds"] as? Double ?? 0) >= 2, "\(recovered)")
        let warnings = during.filter { $0["severity_text"] as? String == "WARN" && $0["loop"] != nil }
        #expect(warnings.count == 1, "\(warnings.map { "\($0["code"] ?? "") \($0["loop"] ?? ""): \($0["body"] ?? "")" })")
        #expect(warnings.first?["code"] as? String == "store_unavailable")
        let others = during.filter { $0["severity_text"] as? String == "WARN" && $0["loop"] == nil }
        #expect(others.count <= 2, "\(others.map { "\($0["code"] ?? "") \($0["body"] ?? "")" })")
        try expectStatus(try await w.token(session), 200)
    }
}
