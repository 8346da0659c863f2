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

    public init(url: String) throws(PGError) {
        guard let c = PQconnectdb(url) else { throw PGError(sqlstate: "08000", message: "out of memory") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(c)
            throw PGError(sqlstate: "08001", message: "cannot connect to PostgreSQL: \(PGError.redactingPasswords(message))")
        }
        conn = c
        _ = try? executeScript("SET application_name = 'tokenbroker'; SET client_min_messages = warning")
    }

    deinit { PQfinish(conn) }

    /// Whether the connection still works (checked after an error, before reuse).
    public var isHealthy: Bool { PQstatus(conn) == CONNECTION_OK }

    /// Runs one statement with its parameters bound (text format).
    @discardableResult
    public func execute(_ sql: SQL) throws(PGError) -> PGRows {
        let n = sql.binds.count
        var cstrings: [UnsafeMutablePointer<CChar>?] = sql.binds.map { $0.map { strdup($0) } ?? nil }
        defer { for p in cstrings { free(p) } }
        let result: OpaquePointer? = cstrings.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(n, 1)) { values in
                PQexecParams(conn, sql.text, Int32(n), nil, n == 0 ? nil : values, nil, nil, 0)
            }
        }
        guard let result else { throw PGError(sqlstate: "08006", message: "no result (connection lost)") }
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
