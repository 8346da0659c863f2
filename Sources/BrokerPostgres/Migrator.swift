import BrokerCore
import Foundation

/// Migrator applies the numbered plain-SQL files of `sql/` (`NNN_name.sql`) in order, each once,
/// recorded in `schema_migrations`. A file is one of two kinds:
///
/// - **In a transaction** (the default): the file and its row in `schema_migrations` commit
///   together. The transaction first takes a transaction-scoped advisory lock and re-reads what
///   is applied, so that replicas migrating at once apply each file exactly once — and the lock
///   ends with the transaction whatever happens, also behind a transaction pooler. Its
///   statements wait at most `lockWait` for a lock (a DDL statement queued behind a long
///   transaction would hold up every writer queued behind it); the file is then tried again.
/// - **Outside a transaction** (first line `-- tokenbroker:no-transaction`): each statement
///   runs and commits on its own, so that `CREATE INDEX CONCURRENTLY` can run and a backfill
///   (`-- tokenbroker:batch`) commits in bounded batches; the row in `schema_migrations` is
///   written after the last statement. Replicas take turns through `MigrationLease`. A file
///   interrupted midway is run again from its start: its statements must be idempotent (the
///   expand/contract test checks the forms), and an index that a failed concurrent build left
///   INVALID is dropped and built again.
public struct Migrator: Sendable {
    /// The advisory lock key of migrations ("tbmigrat" in ASCII).
    static let lockKey: Int64 = 0x7462_6d69_6772_6174

    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String
        /// The file's statements and directives.
        public var script: MigrationScript { MigrationScript(sql) }
        /// Whether the file runs outside a transaction (`-- tokenbroker:no-transaction`).
        public var noTransaction: Bool { script.noTransaction }
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

    /// How long one statement waits for a lock before its migration (or, outside a
    /// transaction, the statement) gives way and is tried again.
    static let lockWait = "500ms"
    /// How many times a statement or file that gave way is tried.
    static let lockTries = 40

    /// Applies what is missing, up to version `through`; returns the versions applied now.
    /// `connect` opens a second connection to the same database, on which the migration lease
    /// is renewed while a long statement runs (without it, between statements only).
    public func migrate(_ c: PGConnection, through: Int = .max, connect: (@Sendable () throws(PGError) -> PGConnection)? = nil) throws -> [Int] {
        var done: [Int] = []
        var lease: MigrationLease?
        defer { lease?.release(on: c) }
        for m in migrations where m.version <= through {
            do {
                if m.noTransaction {
                    try bootstrap(c)
                    if lease == nil { lease = try MigrationLease(on: c, connect: connect) }
                    guard try !appliedVersions(c).contains(m.version) else { continue }
                    try applyOutsideTransaction(m, on: c, lease: lease!)
                } else {
                    guard try giveWayOnLocks({ try applyInTransaction(m, on: c) }) else { continue }
                }
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

    /// The bookkeeping tables, made once by whichever migrator comes first.
    static let bookkeeping = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
        CREATE TABLE IF NOT EXISTS schema_migration_lease (
            scope text PRIMARY KEY DEFAULT 'schema' CHECK (scope = 'schema'), holder text NOT NULL, expires_at timestamptz NOT NULL);
        """

    private func bootstrap(_ c: PGConnection) throws(PGError) {
        try c.executeScript("""
            BEGIN;
            SET LOCAL client_min_messages = warning;
            SELECT pg_advisory_xact_lock(\(Self.lockKey));
            \(Self.bookkeeping)
            COMMIT;
            """)
    }

    /// Applies `m` in one transaction; false when another migrator had applied it.
    private func applyInTransaction(_ m: Migration, on c: PGConnection) throws -> Bool {
        do {
            try c.executeScript("""
                BEGIN;
                SET LOCAL client_min_messages = warning;
                SELECT pg_advisory_xact_lock(\(Self.lockKey));
                \(Self.bookkeeping)
                SET LOCAL lock_timeout = '\(Self.lockWait)';
                """)
            guard try !appliedVersions(c).contains(m.version) else {
                try c.executeScript("COMMIT")
                return false
            }
            try c.executeScript("\(m.sql)\n;INSERT INTO schema_migrations (version, name) VALUES (\(m.version), '\(Self.quoted(m.name))');\nCOMMIT;")
            return true
        } catch {
            _ = try? c.executeScript("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` again while it fails for a lock it waited `lockWait` for (55P03), or for a
    /// deadlock PostgreSQL broke by cancelling it (40P01), up to `lockTries` times.
    func giveWayOnLocks<T>(_ body: () throws -> T) throws -> T {
        var tries = 0
        while true {
            do {
                return try body()
            } catch let e as PGError where (e.sqlstate == "55P03" || e.sqlstate == "40P01") && tries < Self.lockTries {
                tries += 1
                Thread.sleep(forTimeInterval: min(2, 0.05 * Double(tries)))
            }
        }
    }

    static func quoted(_ s: String) -> String { s.replacingOccurrences(of: "'", with: "''") }

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
