import Foundation
import Testing

/// Replicas writing the same rows at once: every multi-row write takes its rows in one order,
/// so they wait for each other and never deadlock.
@Suite("Replicas writing the same rows", .serialized)
struct ContentionTests {
    func deadlocks() throws -> Int {
        Int(try runPSQL("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test("three replicas handing out the same 1,000 sessions for 8 s: no deadlock in PostgreSQL, every use marked")
    func noDeadlocks() async throws {
        let w = try await World(replicas: 3)
        defer { w.stop() }
        let n = 1000
        let subjects = (0..<n).map { "busy-\($0)" }
        let grants = try await w.idp.grants(client: w.idpClientID, subjects: subjects)
        let exp = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3000))
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            var ids: [String] = []
            for (i, subject) in subjects.enumerated() {
                if i >= 16 { ids.append(try await group.next()!) }
                group.addTask {
                    let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, json: [
                        "client": w.client, "subject": subject, "refresh_token": grants[subject]!, "access_token": "at-" + subject,
                        "expires_at": exp])
                    return try expectStatus(r, 201)["session_id"] as! String
                }
            }
            for try await id in group { ids.append(id) }
            return ids
        }
        let before = try deadlocks()
        // Two callers per replica, each a batch of all 1,000 in its own order: every flush of
        // every replica marks every session.
        let until = Date().addingTimeInterval(8)
        let served = try await withThrowingTaskGroup(of: Int.self) { g in
            for caller in 0..<6 {
                g.addTask {
                    var count = 0
                    while Date() < until {
                        let items = ids.shuffled().map { ["session_id": $0] }
                        let r = try await HTTP.post(w.brokers[caller % 3].url + "/v1/tenants/\(w.tenant)/tokens:batch", key: w.workerKey,
                                                    json: ["items": items])
                        try expectStatus(r, 200)
                        for item in r["results"] as? [[String: Any]] ?? [] where item["status"] as? Int == 200 { HandOutLife.check(item, minTTL: nil) }
                        count += 1
                    }
                    return count
                }
            }
            return try await g.reduce(0, +)
        }
        #expect(served >= 6)
        // The replicas' last flushes, and PostgreSQL's statistics (flushed within a second).
        try await Task.sleep(for: .seconds(2))
        #expect(try deadlocks() - before == 0, "deadlocks detected while replicas marked the same sessions")
        let marked = try runPSQL("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND last_used_at IS NOT NULL")
        #expect(marked.trimmingCharacters(in: .whitespacesAndNewlines) == "\(n)")
    }
}
