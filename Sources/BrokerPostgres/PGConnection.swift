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

    /// Connects. Nothing is SET on the session afterwards (a transaction pooler would hand that
    /// state to other clients): the application name travels as a start-up parameter (the URL's
    /// own wins), and server notices are not printed.
    public init(url: String) throws(PGError) {
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
    /// transaction (in an explicit transaction: to its end).
    public struct Plan: Sendable {
        let settings: [(name: String, value: String)]

        /// PostgreSQL's default: planned with the values bound, from the statistics of those values.
        public static let custom = Plan(settings: [])
        /// Planned without looking at the values, so that a key lookup uses its key whatever the
        /// statistics say about the tenant (a tenant bulk-imported after the last ANALYZE looks
        /// empty to a custom plan, which then scans another index for all of its rows).
        public static let generic = Plan(settings: [("plan_cache_mode", "force_generic_plan")])
        /// Sorting made prohibitive: an ORDER BY … LIMIT page walks the index that has its order
        /// and stops at the page's end, however small the statistics say the tenant is.
        public static let indexOrder = Plan(settings: [("enable_sort", "off")])
        /// Generic, and through an index only (no sequential or bitmap scan): for tables whose
        /// statistics are usually those of an empty table (a queue), a lookup by key reads the
        /// key however many rows a burst has put there since.
        public static let keyed = Plan(settings: [("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off"),
                                                  ("enable_bitmapscan", "off")])

        /// This plan with one more setting for the transaction (e.g. `lock_timeout`).
        public func with(_ name: String, _ value: String) -> Plan { Plan(settings: settings + [(name, value)]) }
    }

    /// Runs one statement with its parameters bound (text format). A plan's settings cost no
    /// extra round trip: they are set in the same pipeline, for the statement's transaction
    /// only, so nothing is left on the connection for a pooler to pass on.
    @discardableResult
    public func execute(_ sql: SQL, plan: Plan = .custom) throws(PGError) -> PGRows {
        // Within one transaction a setting once made holds to its end: not made again.
        let inTransaction = beginPending || PQtransactionStatus(conn) == PQTRANS_INTRANS
        if !inTransaction { settingsMade.removeAll() }
        let settings = plan.settings.filter { !settingsMade.contains($0.name + "=" + $0.value) }
        if inTransaction { for s in settings { settingsMade.insert(s.name + "=" + s.value) } }
        var prefix: [SQL] = beginPending ? ["BEGIN"] : []
        beginPending = false
        prefix += settings.map { "SELECT set_config(\($0.name), \($0.value), true)" }
        guard !prefix.isEmpty else { return try check(send(sql, pipelined: false)) }
        return try pipelined(prefix, sql)
    }

    /// Opens a transaction with the next statement, in its round trip (BEGIN is pipelined
    /// ahead of it); `commit` or `rollback` closes it.
    public func begin() {
        beginPending = true
        settingsMade.removeAll()
    }

    /// Commits the transaction `begin` opened (nothing to do when no statement ran in it).
    public func commit() throws(PGError) {
        if beginPending { beginPending = false; return }
        try execute("COMMIT")
    }

    public func rollback() {
        if beginPending { beginPending = false; return }
        _ = try? execute("ROLLBACK")
    }

    private var beginPending = false

    /// The planner settings made in the current transaction (a transaction's end forgets them).
    private var settingsMade: Set<String> = []

    /// The prefix statements, then the statement, in one pipeline: one round trip. Returns the
    /// statement's rows; the first failure is thrown.
    private func pipelined(_ prefix: [SQL], _ sql: SQL) throws(PGError) -> PGRows {
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
        for p in prefix {
            guard send(p, pipelined: true) != nil else { throw failure("cannot send the statement") }
        }
        guard send(sql, pipelined: true) != nil, PQpipelineSync(conn) == 1 else { throw failure("cannot send the statement") }
        let n = prefix.count
        let results = pipelineResults(expecting: n + 1)
        guard results.count == n + 2, PQresultStatus(results[n + 1]) == PGRES_PIPELINE_SYNC else {
            for r in results { PQclear(r) }
            throw failure("no result (connection lost)")
        }
        PQclear(results[n + 1])
        for i in 0..<n {
            do { _ = try check(results[i]) } catch {
                for r in results[(i + 1)...n] { PQclear(r) }
                throw error
            }
        }
        return try check(results[n])
    }

    /// Sends the statement; without a pipeline, waits for its result.
    private func send(_ sql: SQL, pipelined: Bool) -> OpaquePointer? {
        let n = sql.binds.count
        var cstrings: [UnsafeMutablePointer<CChar>?] = sql.binds.map { $0.map { strdup($0) } ?? nil }
        defer { for p in cstrings { free(p) } }
        return cstrings.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(n, 1)) { values in
                let v = n == 0 ? nil : values
                if pipelined {
                    return PQsendQueryParams(conn, sql.text, Int32(n), nil, v, nil, nil, 0) == 1 ? conn : nil
                }
                return PQexecParams(conn, sql.text, Int32(n), nil, v, nil, nil, 0)
            }
        }
    }

    /// The pipeline's results up to and including its sync: one per statement (`n` of them),
    /// then the sync.
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
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? "query failed"
            PQclear(result)
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
