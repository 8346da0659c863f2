import Foundation

extension Migrator {
    /// Runs a `-- tokenbroker:no-transaction` file one statement at a time, then records it.
    ///
    /// - A statement with CONCURRENTLY runs bare (it cannot run in a transaction; its waits do
    ///   not block writers). Before `CREATE INDEX CONCURRENTLY … name`, an index `name` that an
    ///   interrupted build left INVALID is dropped (concurrently), so IF NOT EXISTS does not
    ///   keep it.
    /// - Any other statement runs in a transaction of its own that waits at most `lockWait`
    ///   for a lock and is tried again after a pause: an ALTER TABLE queued behind a long
    ///   transaction would otherwise stop every writer queued behind it.
    /// - A `-- tokenbroker:batch` statement runs again, bound to the `cursor` column it
    ///   returned (`$1`, NULL the first time), until it returns no row or NULL: each batch is a
    ///   transaction of its own, its size bounded by the statement's LIMIT.
    func applyOutsideTransaction(_ m: Migration, on c: PGConnection, lease: MigrationLease) throws {
        for statement in m.script.statements {
            try lease.check(on: c)
            if statement.isBatch {
                var cursor: String?
                repeat {
                    var q = SQL(stringLiteral: statement.text)
                    q.binds = [cursor]
                    let rows = try giveWayOnLocks { try c.execute(q, plan: Self.waitingBriefly) }
                    cursor = rows.count > 0 ? rows.string(0, 0) : nil
                    if cursor != nil { try lease.check(on: c) }
                } while cursor != nil
            } else if Self.isConcurrent(statement.text) {
                if let index = Self.concurrentIndexName(statement.text) { try dropIfInvalid(index, on: c) }
                try giveWayOnLocks { try c.executeScript(statement.text) }
            } else {
                try giveWayOnLocks { try c.execute(SQL(stringLiteral: statement.text), plan: Self.waitingBriefly) }
            }
        }
        try c.execute("INSERT INTO schema_migrations (version, name) VALUES (\(m.version), \(m.name)) ON CONFLICT (version) DO NOTHING")
    }

    /// A statement's own transaction, waiting at most `lockWait` for any lock.
    static var waitingBriefly: PGConnection.Plan { .custom.with("lock_timeout", lockWait) }

    static func isConcurrent(_ text: String) -> Bool {
        words(text).contains("CONCURRENTLY")
    }

    /// The index a `CREATE [UNIQUE] INDEX CONCURRENTLY [IF NOT EXISTS] name ON …` builds.
    static func concurrentIndexName(_ text: String) -> String? {
        let w = words(text)
        guard w.first == "CREATE", let at = w.firstIndex(of: "CONCURRENTLY"), w[..<at].contains("INDEX") else { return nil }
        var i = at + 1
        if w.count > i + 2, w[i] == "IF", w[i + 1] == "NOT", w[i + 2] == "EXISTS" { i += 3 }
        guard i < w.count, w[i] != "ON" else { return nil }
        return w[i].lowercased()
    }

    /// The statement's words, upper-cased, split at blanks and parentheses.
    static func words(_ text: String) -> [String] {
        text.uppercased().split(whereSeparator: { $0.isWhitespace || $0 == "(" || $0 == ")" || $0 == "," }).map(String.init)
    }

    private func dropIfInvalid(_ index: String, on c: PGConnection) throws {
        let invalid = try c.execute("SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(\(index)) AND NOT indisvalid").count == 1
        guard invalid else { return }
        try giveWayOnLocks { try c.executeScript("DROP INDEX CONCURRENTLY IF EXISTS \(index)") }
    }
}
