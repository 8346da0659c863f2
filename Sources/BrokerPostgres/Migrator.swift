import BrokerCore
import Foundation

/// Migrator applies the numbered plain-SQL files of `sql/` (`NNN_name.sql`) in order, each in
/// its own transaction together with its row in `schema_migrations`. Each transaction first takes
/// a transaction-scoped advisory lock and re-reads what is applied, so that replicas migrating
/// at once apply each file exactly once — and the lock ends with the transaction whatever
/// happens, also behind a transaction pooler (a session-level lock would stay on a pooled
/// server connection).
public struct Migrator: Sendable {
    /// The advisory lock key of migrations ("tbmigrat" in ASCII).
    static let lockKey: Int64 = 0x7462_6d69_6772_6174

    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    public let migrations: [Migration]

    /// Reads `directory`; fails on a file name that is not `NNN_name.sql` or a repeated number.
    public init(directory: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        var seen = Set<Int>()
        migrations = try names.map { name in
            guard let us = name.firstIndex(of: "_"), let v = Int(name[..<us]), seen.insert(v).inserted else {
                throw PGError(sqlstate: "42000", message: "migration file '\(name)' is not named NNN_name.sql with a unique NNN")
            }
            return Migration(version: v, name: name, sql: try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8))
        }.sorted { $0.version < $1.version }
    }

    /// Applies what is missing; returns the versions applied now.
    public func migrate(_ c: PGConnection) throws -> [Int] {
        var done: [Int] = []
        for m in migrations {
            do {
                try c.executeScript("""
                    BEGIN;
                    SET LOCAL client_min_messages = warning;
                    SELECT pg_advisory_xact_lock(\(Self.lockKey));
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
                    """)
                guard try !appliedVersions(c).contains(m.version) else {
                    try c.executeScript("COMMIT")
                    continue
                }
                try c.executeScript("\(m.sql)\n;INSERT INTO schema_migrations (version, name) VALUES (\(m.version), '\(m.name.replacingOccurrences(of: "'", with: "''"))');\nCOMMIT;")
            } catch {
                // The migration's own error is the one to report; a ROLLBACK that fails too (the
                // connection is gone) rolls back by itself on the server, and says nothing new.
                _ = try? c.executeScript("ROLLBACK")
                let e = error as? PGError ?? PGError(sqlstate: "XX000", message: "\(error)")
                throw PGError(sqlstate: e.sqlstate, message: "migration \(m.name): \(e.message)")
            }
            done.append(m.version)
        }
        return done
    }

    /// Versions in `sql/` that the database has not applied (empty: current).
    public func pending(_ c: PGConnection) throws -> [Int] {
        let exists: Bool = try c.execute("SELECT to_regclass('schema_migrations') IS NOT NULL AS present").first { try $0["present"] } ?? false
        let applied: Set<Int> = exists ? try appliedVersions(c) : []
        return migrations.map(\.version).filter { !applied.contains($0) }
    }

    private func appliedVersions(_ c: PGConnection) throws -> Set<Int> {
        let r = try c.execute("SELECT version FROM schema_migrations")
        return Set(try r.map { try $0["version"] as Int })
    }
}
