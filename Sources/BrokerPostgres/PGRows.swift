import CLibPQ
import Foundation

/// PGRows is a query result in text format, read row by row through PGRow. It frees the libpq
/// result when released.
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

    /// The value as text, or nil for NULL (decoders read rows through PGRow).
    public func string(_ row: Int, _ col: Int) -> String? {
        guard PQgetisnull(result, Int32(row), Int32(col)) == 0 else { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(col)))
    }
}
