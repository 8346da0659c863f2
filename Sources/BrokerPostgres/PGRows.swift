import CLibPQ
import Foundation

/// PGRows is a query result in text format, read row by row through PGRow. The column names
/// are resolved to positions once, when the result arrives, so reading a row by name costs a
/// dictionary lookup per column and no call into libpq for names. It frees the libpq result
/// when released.
public final class PGRows: @unchecked Sendable {
    private let result: OpaquePointer
    private let columns: [String: Int]
    public let count: Int
    public let affected: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        var columns: [String: Int] = [:]
        for i in 0..<PQnfields(result) {
            guard let name = PQfname(result, i) else { continue }
            // The first of two columns with one name wins, as in SQL's own lookups.
            let key = String(cString: name)
            if columns[key] == nil { columns[key] = Int(i) }
        }
        self.columns = columns
    }

    deinit { PQclear(result) }

    /// The position of the column the statement names `name`, or nil when it selects none.
    public func column(_ name: String) -> Int? { columns[name] }

    /// The value as text, or nil for NULL (decoders read rows through PGRow).
    public func string(_ row: Int, _ col: Int) -> String? {
        guard PQgetisnull(result, Int32(row), Int32(col)) == 0 else { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(col)))
    }
}
