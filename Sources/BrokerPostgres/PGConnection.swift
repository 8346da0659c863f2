import BrokerCore
import CLibPQ
import Foundation

/// PGConnection owns one libpq connection: its pointer, its error codes and its results. It is
/// used by one thread at a time (the pool guarantees it), hence `@unchecked Sendable`.
///
/// Errors are reported as PGError with the SQLSTATE and libpq's primary message only: DETAIL
/// (which can quote row values) is never read.
public final class PGConnection: @unchecked Sendable {
    let conn: OpaquePointer
    /// Whether key lookups are prepared (see `Plan`): the pool's switch, which a transaction
    /// pooler's answer turns off for every connection.
    let statements: PreparedStatements
    var prepares: Bool { statements.enabled }

    /// Connects. Nothing is SET on the session afterwards (a transaction pooler would hand that
    /// state to other clients): the application name travels as a start-up parameter (the URL's
    /// own wins), and server notices are not printed. `prepares: false` for a transaction pooler
    /// that does not carry prepared statements between server connections (PgBouncer before
    /// 1.21, or with `max_prepared_statements = 0`); such a pooler's first answer that a
    /// prepared statement is missing or already there turns them off (`statements`).
    public convenience init(url: String, prepares: Bool = true) throws(PGError) {
        try self.init(url: url, statements: PreparedStatements(prepares))
    }

    /// Connects, sharing the switch `statements` with the other connections of its pool.
    public init(url: String, statements: PreparedStatements) throws(PGError) {
        self.statements = statements
        let c: OpaquePointer? = ["application_name", "dbname"].withCStrings { keys in
            ["tokenbroker", url].withCStrings { values in PQconnectdbParams(keys, values, 1) }
        }
        guard let c else { throw PGError(sqlstate: "08000", message: "out of memory") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(c)
            throw PGError(sqlstate: "08001", message: "cannot connect to PostgreSQL: \(PGError.redactingPasswords(message))")
        }
        conn = c
        PQsetNoticeProcessor(c, { context, message in
            guard let context, let message else { return }
            let me = Unmanaged<PGConnection>.fromOpaque(context).takeUnretainedValue()
            me.noticeHandler?(String(cString: message))
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { PQfinish(conn) }

    /// Receives the server's notices on this connection (none by default). Set it before the
    /// connection is shared; the plan-shape test reads auto_explain's plans through it.
    public var noticeHandler: (@Sendable (String) -> Void)?

    /// Connected, out of pipeline mode and out of any transaction: fit to go back to the pool.
    public var isHealthy: Bool {
        PQstatus(conn) == CONNECTION_OK && PQpipelineStatus(conn) == PQ_PIPELINE_OFF && PQtransactionStatus(conn) == PQTRANS_IDLE
            && !beginPending
    }

    /// How a statement is planned: planner settings that hold for the statement's own
    /// transaction (in an explicit transaction: to its end), and whether the statement is
    /// prepared once per connection.
    public struct Plan: Sendable {
        let settings: [(name: String, value: String)]
        var prepared = false

        /// PostgreSQL's default: planned with the values bound, from the statistics of those values.
        public static let custom = Plan(settings: [])
        /// Planned without looking at the values, so that a key lookup uses its key whatever the
        /// statistics say about the tenant (a tenant bulk-imported after the last ANALYZE looks
        /// empty to a custom plan, which then scans another index for all of its rows).
        public static let generic = Plan(settings: [("plan_cache_mode", "force_generic_plan")])
        /// Generic and prepared: parsed and planned once per connection, not on every call (in
        /// the refresh storm, parsing and planning were a third of PostgreSQL's CPU). Only for a
        /// statement that reads or writes one row by its whole primary key: its plan is the
        /// key's index whatever the table's size when it was made. A cached plan is kept while
        /// the table grows, so a statement over many rows (`= ANY`, a join, a range) planned
        /// when the table was small would keep a small table's plan: those stay `.generic`
        /// (measured: a batch of 1,000 unknown ids went from 8 to 25 ms prepared).
        public static let keyLookup = Plan(settings: [("plan_cache_mode", "force_generic_plan")], prepared: true)
        /// Sorting made prohibitive: an ORDER BY … LIMIT page walks the index that has its order
        /// and stops at the page's end, however small the statistics say the tenant is.
        public static let indexOrder = Plan(settings: [("enable_sort", "off")])
        /// Generic, and through an index only (no sequential or bitmap scan): for tables whose
        /// statistics are usually those of an empty table (a queue), a lookup by key reads the
        /// key however many rows a burst has put there since.
        public static let keyed = Plan(settings: [("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off"),
                                                  ("enable_bitmapscan", "off")])

        /// This plan with one more setting for the transaction (e.g. `lock_timeout`).
        public func with(_ name: String, _ value: String) -> Plan { Plan(settings: settings + [(name, value)], prepared: prepared) }
    }

    /// Runs one statement with its parameters bound (text format). A plan's settings cost no
    /// extra round trip: they are set in the same pipeline, for the statement's transaction
    /// only, so nothing is left on the connection for a pooler to pass on.
    @discardableResult
    public func execute(_ sql: SQL, plan: Plan = .custom) throws(PGError) -> PGRows {
        try redoingAfterPoolerLoss { () throws(PGError) in try executeOnce(sql, plan: plan) }
    }

    private func executeOnce(_ sql: SQL, plan: Plan) throws(PGError) -> PGRows {
        let settings = settingSteps(plan, inTransaction: inTransaction)
        var steps: [Step] = beginPending ? [Step("BEGIN", prepared: false, on: self)] : []
        beginPending = false
        steps += settings
        let main = Step(sql, prepared: plan.prepared, on: self)
        guard !steps.isEmpty || main.prepare else { return try check(send(main)) }
        return try pipelined(steps + [main]).last!
    }

    /// Opens a transaction with the next statement, in its round trip (BEGIN is pipelined
    /// ahead of it); `commit` or `rollback` closes it.
    public func begin() {
        beginPending = true
        settingsMade.removeAll()
    }

    /// Commits the transaction `begin` opened (nothing to do when no statement ran in it, or
    /// when `commit(with:)` ended it).
    public func commit() throws(PGError) {
        if beginPending { beginPending = false; return }
        guard PQtransactionStatus(conn) != PQTRANS_IDLE else { return }
        try execute("COMMIT")
    }

    /// Runs the transaction's last statements and COMMIT in one round trip, and returns the
    /// statements' rows. If one fails, nothing is committed and the error is thrown (the
    /// transaction is left for `rollback`).
    public func commit(with statements: [(sql: SQL, plan: Plan)]) throws(PGError) -> [PGRows] {
        guard !statements.isEmpty else { try commit(); return [] }
        return try redoingAfterPoolerLoss { () throws(PGError) in try commitOnce(with: statements) }
    }

    private func commitOnce(with statements: [(sql: SQL, plan: Plan)]) throws(PGError) -> [PGRows] {
        let open = inTransaction
        var steps: [Step] = beginPending ? [Step("BEGIN", prepared: false, on: self)] : []
        beginPending = false
        var wanted: [Int] = []
        for (sql, plan) in statements {
            steps += settingSteps(plan, inTransaction: open)
            wanted.append(steps.count)
            steps.append(Step(sql, prepared: plan.prepared, on: self))
        }
        let rows = try pipelined(steps + [Step("COMMIT", prepared: false, on: self)])
        return wanted.map { rows[$0] }
    }

    public func rollback() {
        if beginPending { beginPending = false; return }
        guard PQtransactionStatus(conn) != PQTRANS_IDLE else { return }
        // The error that led here is the one the caller reports. A ROLLBACK that fails leaves the
        // connection out of the idle state, so isHealthy is false and the pool closes it, which
        // ends the transaction on the server.
        _ = try? execute("ROLLBACK")
    }

    /// Runs one round trip (`body`); when a transaction pooler lost a prepared statement in it,
    /// turns prepared statements off for the pool and runs it once more, unnamed — when that
    /// is sound. A failed prepare or execution did nothing, but PostgreSQL aborts the whole
    /// transaction it was in:
    /// - outside a transaction, or in one this round trip opened (its BEGIN travels with it),
    ///   nothing else was done: the transaction is rolled back, and the round trip is sent
    ///   again, BEGIN and all;
    /// - in a transaction opened earlier, the earlier statements are lost with it and only the
    ///   caller could redo them. A caller's transaction may hold a refresh token the IdP has
    ///   just rotated, so it is not run again here: the error goes up (store_unavailable, once
    ///   per transaction in flight when the pooler's answer came) and the caller's own path for
    ///   a database error applies (a refresh keeps the IdP's answer and writes it later).
    private func redoingAfterPoolerLoss<T>(_ body: () throws(PGError) -> T) throws(PGError) -> T {
        let named = prepares
        let fresh = PQtransactionStatus(conn) == PQTRANS_IDLE
        let opening = beginPending
        do {
            return try body()
        } catch {
            guard named, PreparedStatements.isPoolerLoss(error) else { throw error }
            statements.turnOff(after: error)
            preparedTexts.removeAll()
            guard fresh, PQstatus(conn) == CONNECTION_OK else { throw error }
            if PQtransactionStatus(conn) != PQTRANS_IDLE { _ = try executeOnce("ROLLBACK", plan: .custom) }
            beginPending = opening
            settingsMade.removeAll()
            return try body()
        }
    }

    /// In a transaction, or about to open one with the next statement.
    private var inTransaction: Bool { beginPending || PQtransactionStatus(conn) == PQTRANS_INTRANS }

    /// The `set_config` steps of a plan's settings not made yet in this transaction (within one
    /// transaction a setting once made holds to its end).
    private func settingSteps(_ plan: Plan, inTransaction: Bool) -> [Step] {
        if !inTransaction { settingsMade.removeAll() }
        let settings = plan.settings.filter { !settingsMade.contains($0.name + "=" + $0.value) }
        if inTransaction { for s in settings { settingsMade.insert(s.name + "=" + s.value) } }
        return settings.map { Step("SELECT set_config(\($0.name), \($0.value), true)", prepared: true, on: self) }
    }

    private var beginPending = false

    /// The planner settings made in the current transaction (a transaction's end forgets them).
    private var settingsMade: Set<String> = []

    /// One statement to send: unnamed (parsed and planned with its values), or a prepared
    /// statement named after its text, with `prepare` when this connection has not prepared it yet.
    private struct Step {
        let sql: SQL
        let name: String?
        let prepare: Bool

        init(_ sql: SQL, prepared: Bool, on c: PGConnection) {
            self.sql = sql
            name = prepared && c.prepares ? PGConnection.statementName(sql.text) : nil
            prepare = name.map { c.preparedTexts[$0] != sql.text } ?? false
        }
    }

    /// The texts of the statements prepared on this connection, by name.
    private var preparedTexts: [String: String] = [:]

    /// `tb_` and the text's 64-bit FNV-1a hash: the same text has the same name on every
    /// connection, so a name can never stand for another of the broker's statements.
    static func statementName(_ text: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in text.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        let hex = String(h, radix: 16)
        return "tb_" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The steps in one pipeline: one round trip (a statement not prepared yet is prepared in
    /// it, ahead of its execution). Returns every step's rows; the first failure is thrown.
    private func pipelined(_ steps: [Step]) throws(PGError) -> [PGRows] {
        guard PQenterPipelineMode(conn) == 1 else { throw failure("cannot enter pipeline mode") }
        // Whatever happened, the pipeline is drained to its end before leaving it; a connection
        // that cannot leave it is not healthy (isHealthy) and the pool drops it.
        defer {
            var left = 0
            while PQexitPipelineMode(conn) != 1, PQstatus(conn) == CONNECTION_OK, left < 16 {
                if let r = PQgetResult(conn) { PQclear(r) }
                left += 1
            }
        }
        // What each result answers: a prepare (of that name and text) or a step's execution.
        var answers: [(name: String, text: String)?] = []
        var preparing: Set<String> = []   // a text twice in one pipeline is prepared once
        for step in steps {
            if step.prepare, let name = step.name, preparing.insert(name).inserted {
                guard PQsendPrepare(conn, name, step.sql.text, Int32(step.sql.binds.count), nil) == 1 else {
                    throw failure("cannot send the statement")
                }
                answers.append((name, step.sql.text))
            }
            guard send(step, pipelined: true) != nil else { throw failure("cannot send the statement") }
            answers.append(nil)
        }
        guard PQpipelineSync(conn) == 1 else { throw failure("cannot send the statement") }
        let n = answers.count
        let results = pipelineResults(expecting: n)
        guard results.count == n + 1, PQresultStatus(results[n]) == PGRES_PIPELINE_SYNC else {
            for r in results { PQclear(r) }
            throw failure("no result (connection lost)")
        }
        PQclear(results[n])
        var firstError: PGError?
        var rows: [PGRows] = []
        for (i, prepared) in answers.enumerated() {
            if let prepared, PQresultStatus(results[i]) == PGRES_COMMAND_OK { preparedTexts[prepared.name] = prepared.text }
            do {
                let r = try check(results[i])
                if prepared == nil { rows.append(r) }
            } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
        return rows
    }

    /// Sends the step; without a pipeline, waits for its result.
    private func send(_ step: Step, pipelined: Bool = false) -> OpaquePointer? {
        let sql = step.sql
        let n = sql.binds.count
        var cstrings: [UnsafeMutablePointer<CChar>?] = sql.binds.map { $0.map { strdup($0) } ?? nil }
        defer { for p in cstrings { free(p) } }
        return cstrings.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(n, 1)) { values in
                let v = n == 0 ? nil : values
                switch (step.name, pipelined) {
                case (let name?, true): return PQsendQueryPrepared(conn, name, Int32(n), v, nil, nil, 0) == 1 ? conn : nil
                case (let name?, false): return PQexecPrepared(conn, name, Int32(n), v, nil, nil, 0)
                case (nil, true): return PQsendQueryParams(conn, sql.text, Int32(n), nil, v, nil, nil, 0) == 1 ? conn : nil
                case (nil, false): return PQexecParams(conn, sql.text, Int32(n), nil, v, nil, nil, 0)
                }
            }
        }
    }

    /// The pipeline's results up to and including its sync: one per statement or prepare (`n`
    /// of them), then the sync.
    private func pipelineResults(expecting n: Int) -> [OpaquePointer] {
        var out: [OpaquePointer] = []
        var ends = 0
        while out.count < n + 1 {
            guard let r = PQgetResult(conn) else {
                ends += 1     // the end of one statement's results
                if PQstatus(conn) != CONNECTION_OK || ends > n + 1 { break }
                continue
            }
            out.append(r)
            if PQresultStatus(r) == PGRES_PIPELINE_SYNC { break }
        }
        return out
    }

    /// The result as rows (which free it), or its error thrown (the result freed).
    private func check(_ result: OpaquePointer?) throws(PGError) -> PGRows {
        guard let result else { throw failure("no result (connection lost)") }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return PGRows(result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? "XX000"
            var primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? "query failed"
            PQclear(result)
            if state == "26000" || state == "42P05" {
                // A transaction pooler handed this client another server connection, where a
                // statement prepared here is missing, or another client's is there: the pool
                // turns prepared statements off (`redoingAfterPoolerLoss`); say what to set.
                preparedTexts.removeAll()
                primary += " (a transaction pooler without prepared statements? set TOKENBROKER_DB_PREPARED_STATEMENTS=false)"
            }
            throw PGError(sqlstate: state, message: primary)
        }
    }

    private func failure(_ what: String) -> PGError {
        PGError(sqlstate: PQstatus(conn) == CONNECTION_OK ? "XX000" : "08006", message: what)
    }

    /// Runs several statements in one round trip (no parameters: migrations only).
    public func executeScript(_ text: String) throws(PGError) {
        guard let result = PQexec(conn, text) else { throw PGError(sqlstate: "08006", message: "no result") }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? "script failed"
            throw PGError(sqlstate: PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? "XX000", message: primary)
        }
    }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(conn) }

    /// Reads what arrived on the socket and returns the notifications queued so far.
    func notifications() throws(PGError) -> [(channel: String, payload: String)] {
        guard PQconsumeInput(conn) == 1 else { throw PGError(sqlstate: "08006", message: "connection lost") }
        var out: [(String, String)] = []
        while let n = PQnotifies(conn) {
            out.append((String(cString: n.pointee.relname), String(cString: n.pointee.extra)))
            PQfreemem(n)
        }
        return out
    }
}

extension Array where Element == String {
    /// The strings as a NULL-terminated C array, valid inside `body`.
    func withCStrings<T>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = map { strdup($0) } + [nil]
        defer { for p in copies { free(p) } }
        return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
