import CLibPQ
import Foundation

/// PGRows is a query result in text format, read by row and column. It frees the libpq result
/// when released.
public final class PGRows: @unchecked Sendable {
    private let result: OpaquePointer
    public let count: Int
    public let affected: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    deinit { PQclear(result) }

    public func string(_ row: Int, _ col: Int) -> String? {
        guard PQgetisnull(result, Int32(row), Int32(col)) == 0 else { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(col)))
    }

    public func int(_ row: Int, _ col: Int) -> Int? { string(row, col).flatMap { Int($0) } }
    public func int64(_ row: Int, _ col: Int) -> Int64? { string(row, col).flatMap { Int64($0) } }
    public func double(_ row: Int, _ col: Int) -> Double? { string(row, col).flatMap { Double($0) } }
    public func bool(_ row: Int, _ col: Int) -> Bool? { string(row, col).map { $0 == "t" } }

    /// A timestamp selected as `extract(epoch from col)`.
    public func date(_ row: Int, _ col: Int) -> Date? { double(row, col).map { Date(timeIntervalSince1970: $0) } }

    public func bytes(_ row: Int, _ col: Int) -> [UInt8]? { string(row, col).flatMap(PGText.bytea) }

    /// An array selected as `array_to_string(col, ' ')` (space-free elements: scopes, slugs, URLs).
    public func words(_ row: Int, _ col: Int) -> [String] {
        string(row, col).map { $0.split(separator: " ").map(String.init) } ?? []
    }
}
