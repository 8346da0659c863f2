import Foundation

/// A column value read from PostgreSQL's text format.
public protocol PGValue {
    init?(pgText: String)
}

extension String: PGValue { public init?(pgText: String) { self = pgText } }
extension Int: PGValue { public init?(pgText: String) { self.init(pgText) } }
extension Int64: PGValue { public init?(pgText: String) { self.init(pgText) } }
extension Double: PGValue { public init?(pgText: String) { self.init(pgText) } }
extension Bool: PGValue { public init?(pgText: String) { self = pgText == "t" } }

/// A timestamp selected as `extract(epoch from col)`.
extension Date: PGValue {
    public init?(pgText: String) {
        guard let s = Double(pgText) else { return nil }
        self.init(timeIntervalSince1970: s)
    }
}

/// PGRow reads one row of a result column by column, in the order the statement selects them,
/// so a decoder names no column numbers. A NULL where a value is required, or text that does not
/// parse as the type asked for, throws (SQLSTATE XX000, naming the column number, never its
/// value) instead of crashing the process.
///
///     var row = rows.row(0)
///     let id: String = try row.next()
///     let email: String? = try row.next()
public struct PGRow {
    let rows: PGRows
    let index: Int
    private(set) var column = 0

    init(rows: PGRows, index: Int) {
        self.rows = rows
        self.index = index
    }

    /// The next column, required.
    public mutating func next<T: PGValue>() throws(PGError) -> T {
        guard let v: T = try next() else { throw PGError(sqlstate: "XX000", message: "column \(column) of the result is NULL") }
        return v
    }

    /// The next column; NULL is nil.
    public mutating func next<T: PGValue>() throws(PGError) -> T? {
        defer { column += 1 }
        guard let s = rows.string(index, column) else { return nil }
        guard let v = T(pgText: s) else { throw PGError(sqlstate: "XX000", message: "column \(column + 1) of the result is not a \(T.self)") }
        return v
    }

    /// The next column as bytea; NULL is nil.
    public mutating func bytes() throws(PGError) -> [UInt8]? {
        guard let s: String = try next() else { return nil }
        guard let b = PGText.bytea(s) else { throw PGError(sqlstate: "XX000", message: "column \(column) of the result is not bytea") }
        return b
    }

    /// The next column, an array selected as `array_to_string(col, ' ')` (space-free elements:
    /// scopes, slugs, URLs); NULL is empty.
    public mutating func words() throws(PGError) -> [String] {
        let s: String? = try next()
        return s.map { $0.split(separator: " ").map(String.init) } ?? []
    }

    /// Passes over the next column.
    public mutating func skip() { column += 1 }
}

extension PGRows {
    public func row(_ i: Int) -> PGRow { PGRow(rows: self, index: i) }

    /// Every row, decoded by `body`.
    public func map<T>(_ body: (inout PGRow) throws -> T) throws -> [T] {
        try (0..<count).map { i in
            var r = row(i)
            return try body(&r)
        }
    }

    /// The first row decoded by `body`, or nil when there is none.
    public func first<T>(_ body: (inout PGRow) throws -> T) throws -> T? {
        guard count > 0 else { return nil }
        var r = row(0)
        return try body(&r)
    }
}
