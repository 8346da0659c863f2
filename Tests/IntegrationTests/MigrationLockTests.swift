import Foundation
import Testing

/// Every migration applied to a table of a million sessions while a writer updates random
/// sessions without pause (the `migration-locks` tool): none may keep one write waiting for a
/// second. This is the upgrade of a database at version 1 holding a million sessions — every
/// later migration runs on the full table.
@Suite("Migrations on a million sessions", .serialized)
struct MigrationLockTests {
    @Test("no migration keeps a writer of sessions waiting a second on a million rows")
    func noMigrationBlocksWriters() throws {
        let db = "locks_" + UUID().uuidString.prefix(8).lowercased()
        _ = try runPSQL("CREATE DATABASE \(db)")
        defer { _ = try? runPSQL("DROP DATABASE \(db) WITH (FORCE)") }
        let run = try runCommand("migration-locks", ["--rows", "1000000", "--sql", TestEnv.root.appendingPathComponent("sql").path],
                                 env: ["DATABASE_URL": try TestEnv.databaseURL(named: db)])
        #expect(run.status == 0, "\(run.err)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any], "\(run.out)")
        let migrations = try #require(report["migrations"] as? [[String: Any]])
        #expect(migrations.count >= 25)
        for m in migrations {
            let waited = m["longest_write_wait_ms"] as? Double ?? .infinity
            #expect(waited < 1000, "\(m["name"] ?? "?") kept a write of sessions waiting \(waited) ms")
            #expect(m["failed_writes"] as? Int == 0, "\(m)")
        }
        print("migration locks:", report["worst_migration"] ?? "", report["longest_write_wait_ms"] ?? "", "ms; load", report["load_seconds"] ?? "",
              "s; migrate", report["migrate_seconds"] ?? "", "s")
    }
}
