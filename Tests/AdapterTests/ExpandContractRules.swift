import BrokerPostgres
import Foundation

/// ExpandContractRules reads migrations as CONTRIBUTING.md's "Migrations: expand, then
/// contract" states the rule, and names every statement that breaks it:
///
/// - **contract**: a statement that would break replicas of the previous release still running
///   against the new schema (DROP TABLE/COLUMN, RENAME, a column's TYPE or SET NOT NULL, a NOT
///   NULL column without a default on an existing table, dropping an index or a key that is not
///   made again in the same migration) must say `-- tokenbroker:contract NNN`, NNN an earlier
///   migration: the expand whose release made it unused.
/// - **lock**: on an existing large table, nothing that blocks its writers for the length of a
///   scan: CREATE INDEX only CONCURRENTLY, UPDATE/DELETE only in batches, constraints added NOT
///   VALID (then VALIDATE), columns added without a check, key or volatile default, no
///   VACUUM FULL, CLUSTER, plain REINDEX or LOCK TABLE. A migration in a transaction that
///   alters such a table does nothing else that scans, since it holds the table's lock to COMMIT.
/// - **kind**: CONCURRENTLY and batches only outside a transaction; outside a transaction every
///   statement is idempotent (the file may be run again after an interruption).
struct ExpandContractRules {
    /// Tables that grow with the users: their writers must never wait for a scan.
    static let large: Set<String> = ["sessions", "audit_events", "webhook_events", "webhook_deliveries"]

    struct File {
        let version: Int
        let name: String
        let sql: String
    }

    struct Violation: CustomStringConvertible, Equatable {
        let file: String
        let rule: String
        let statement: String
        var description: String { "\(file): \(rule): \(statement.prefix(100))" }
    }

    static func check(_ files: [File]) -> [Violation] {
        var existing = Set<String>(), versions = Set<Int>(), out: [Violation] = []
        for f in files.sorted(by: { $0.version < $1.version }) {
            let script = MigrationScript(f.sql)
            let statements = script.statements.map { (s: $0, u: normalized($0.text)) }
            let created = Set(statements.flatMap { creates($0.u) })
            let recreated = Set(statements.flatMap { madeNames($0.u) })
            let altersLarge = statements.contains { alteredTable($0.u).map { large.contains($0) && existing.contains($0) } ?? false }
            for (s, u) in statements {
                func flag(_ rule: String) { out.append(Violation(file: f.name, rule: rule, statement: u)) }
                let targets = Set(touched(u)).subtracting(created)
                let onLarge = !targets.intersection(large).intersection(existing).isEmpty
                // contract
                if let why = contractReason(u, recreated: recreated, existing: existing) {
                    if let v = s.contracts, v < f.version, versions.contains(v) {} else {
                        flag("contract step without `-- tokenbroker:contract NNN` naming an earlier expand (\(why))")
                    }
                }
                // lock
                if onLarge, let why = lockReason(u, batch: s.isBatch) { flag("blocks writers of a large table: \(why)") }
                if !script.noTransaction, altersLarge, scans(u) {
                    flag("scans in the transaction that holds a large table's ALTER lock to COMMIT")
                }
                // kind
                if !script.noTransaction, u.contains(" CONCURRENTLY ") || s.isBatch {
                    flag("CONCURRENTLY or a batch in a migration run in a transaction (first line `-- tokenbroker:no-transaction`)")
                }
                if script.noTransaction, let why = notIdempotent(u, batch: s.isBatch) { flag("not idempotent outside a transaction: \(why)") }
            }
            existing.formUnion(created)
            versions.insert(f.version)
        }
        return out
    }

    /// Upper case, comments gone, one blank between words, one blank around parentheses and
    /// commas (so that " X " finds a word).
    static func normalized(_ text: String) -> String {
        var t = ""
        for line in text.split(separator: "\n") {
            let code = line.range(of: "--").map { line[..<$0.lowerBound] } ?? line[...]
            t += code + " "
        }
        for c in ["(", ")", ",", ";"] { t = t.replacingOccurrences(of: c, with: " \(c) ") }
        return " " + t.uppercased().split(whereSeparator: \.isWhitespace).joined(separator: " ") + " "
    }

    static func words(_ u: String) -> [String] { u.split(separator: " ").map(String.init) }

    /// The word after `phrase` (skipping IF [NOT] EXISTS and ONLY), lower-cased.
    static func nameAfter(_ phrase: String, in u: String) -> [String] {
        var names: [String] = [], rest = u[...]
        while let r = rest.range(of: " \(phrase) ") {
            var w = words(String(rest[r.upperBound...]))
            while let first = w.first, ["IF", "NOT", "EXISTS", "ONLY", "CONCURRENTLY"].contains(first) { w.removeFirst() }
            if let n = w.first { names.append(n.lowercased()) }
            rest = rest[r.upperBound...]
        }
        return names
    }

    static func creates(_ u: String) -> [String] { nameAfter("CREATE TABLE", in: u) }
    static func alteredTable(_ u: String) -> String? { nameAfter("ALTER TABLE", in: u).first }

    /// Tables the statement writes or changes.
    static func touched(_ u: String) -> [String] {
        var t = nameAfter("ALTER TABLE", in: u) + nameAfter("UPDATE", in: u) + nameAfter("DELETE FROM", in: u)
            + nameAfter("INSERT INTO", in: u) + nameAfter("LOCK TABLE", in: u) + nameAfter("CLUSTER", in: u)
            + nameAfter("VACUUM FULL", in: u) + nameAfter("REINDEX TABLE", in: u)
        if u.hasPrefix(" CREATE ") && u.contains(" INDEX ") { t += nameAfter("ON", in: u).prefix(1) }
        return t
    }

    /// Indexes and constraints the statement makes (a drop of one of these names is a replacement).
    static func madeNames(_ u: String) -> [String] {
        var names = nameAfter("ADD CONSTRAINT", in: u)
        if u.hasPrefix(" CREATE "), u.contains(" INDEX ") { names += nameAfter("INDEX", in: u).filter { $0 != "on" } }
        if u.contains(" ADD PRIMARY KEY "), let t = alteredTable(u) { names.append(t + "_pkey") }
        return names
    }

    static func contractReason(_ u: String, recreated: Set<String>, existing: Set<String>) -> String? {
        if u.contains(" DROP TABLE ") { return "DROP TABLE" }
        if u.contains(" DROP COLUMN ") { return "DROP COLUMN" }
        if u.contains(" RENAME ") { return "RENAME" }
        if u.contains(" SET NOT NULL ") { return "SET NOT NULL" }
        if u.contains(" ALTER COLUMN "), u.contains(" TYPE ") { return "a column's TYPE" }
        if let t = alteredTable(u), existing.contains(t), u.contains(" ADD COLUMN "), u.contains(" NOT NULL "), !u.contains(" DEFAULT ") {
            return "NOT NULL column without a default"
        }
        for i in nameAfter("DROP INDEX", in: u) where !recreated.contains(i) { return "DROP INDEX \(i)" }
        for c in nameAfter("DROP CONSTRAINT", in: u) where (c.hasSuffix("_pkey") || c.hasSuffix("_key")) && !recreated.contains(c) {
            return "DROP CONSTRAINT \(c)"
        }
        return nil
    }

    static let volatileDefaults = ["RANDOM (", "CLOCK_TIMESTAMP (", "GEN_RANDOM_UUID (", "UUID_GENERATE", "NEXTVAL (", "TIMEOFDAY ("]

    static func lockReason(_ u: String, batch: Bool) -> String? {
        if u.hasPrefix(" CREATE ") && u.contains(" INDEX ") && !u.contains(" CONCURRENTLY ") { return "CREATE INDEX without CONCURRENTLY" }
        if (u.contains(" UPDATE ") || u.contains(" DELETE FROM ")) && !batch { return "UPDATE or DELETE not in batches (`-- tokenbroker:batch`)" }
        if u.contains(" ADD CONSTRAINT ") || u.contains(" ADD CHECK ") || u.contains(" ADD FOREIGN KEY ") {
            if u.contains(" PRIMARY KEY ") || u.contains(" UNIQUE ") { if !u.contains(" USING INDEX ") { return "a key built under the lock" } }
            else if !u.contains(" NOT VALID ") { return "a constraint validated under the lock (add it NOT VALID, then VALIDATE)" }
        }
        if u.contains(" ADD PRIMARY KEY ") || u.contains(" ADD UNIQUE ") { return "a key built under the lock" }
        if u.contains(" ADD COLUMN ") {
            for bad in [" CHECK ", " REFERENCES ", " UNIQUE ", " PRIMARY KEY ", " GENERATED ", " SERIAL ", " BIGSERIAL "] where u.contains(bad) {
                return "a column added with\(bad.lowercased())(a scan or a rewrite under the lock)"
            }
            for v in volatileDefaults where u.contains(v) { return "a column with a volatile default (a rewrite)" }
        }
        if u.contains(" ALTER COLUMN "), u.contains(" TYPE ") { return "a column's TYPE (a rewrite)" }
        if u.contains(" VACUUM FULL ") || u.hasPrefix(" CLUSTER ") || u.hasPrefix(" LOCK TABLE ") { return "a table lock" }
        if u.hasPrefix(" REINDEX ") && !u.contains(" CONCURRENTLY ") { return "REINDEX without CONCURRENTLY" }
        return nil
    }

    /// Work that reads a table through (held under an ALTER's lock, it blocks that table).
    static func scans(_ u: String) -> Bool {
        (u.hasPrefix(" CREATE ") && u.contains(" INDEX ")) || u.contains(" UPDATE ") || u.contains(" DELETE FROM ")
            || u.contains(" VALIDATE CONSTRAINT ") || (u.contains(" INSERT INTO ") && u.contains(" SELECT "))
    }

    static func notIdempotent(_ u: String, batch: Bool) -> String? {
        if batch {
            return u.contains("$1") && u.contains(" LIMIT ") && u.contains(" AS CURSOR ") ? nil : "a batch reads its cursor ($1), has a LIMIT and returns AS cursor"
        }
        if u.hasPrefix(" CREATE ") && !u.contains(" IF NOT EXISTS ") && !u.hasPrefix(" CREATE OR REPLACE ") { return "CREATE without IF NOT EXISTS" }
        if u.contains(" ADD COLUMN ") && !u.contains(" ADD COLUMN IF NOT EXISTS ") { return "ADD COLUMN without IF NOT EXISTS" }
        if u.hasPrefix(" DROP ") && !u.contains(" IF EXISTS ") { return "DROP without IF EXISTS" }
        if u.contains(" DROP COLUMN ") && !u.contains(" DROP COLUMN IF EXISTS ") { return "DROP COLUMN without IF EXISTS" }
        for c in nameAfter("ADD CONSTRAINT", in: u) where !u.contains(" DROP CONSTRAINT IF EXISTS \(c.uppercased()) ") {
            return "ADD CONSTRAINT \(c) without DROP CONSTRAINT IF EXISTS \(c) before it"
        }
        if u.contains(" INSERT INTO ") && !u.contains(" ON CONFLICT ") { return "INSERT without ON CONFLICT" }
        if u.contains(" UPDATE ") || u.contains(" DELETE FROM ") { return "UPDATE or DELETE not in batches" }
        return nil
    }
}
