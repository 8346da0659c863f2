import BrokerCore
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

/// A timestamp selected as `extract(epoch from col) AS col`.
extension Date: PGValue {
    public init?(pgText: String) {
        guard let s = Double(pgText) else { return nil }
        self.init(timeIntervalSince1970: s)
    }
}

/// PGRow reads one row of a result by column name: the name the statement gives the column
/// (`expr AS name`), resolved to its position once per result (PGRows.column), so a decoder
/// depends on names, never on the order of the SELECT list. A column the statement does not
/// select, a NULL where a value is required, or text that does not parse as the type asked for
/// throws a PGError (SQLSTATE XX000) naming the column, never its value, instead of crashing
/// the process. A stored enum value this release does not know throws
/// `BrokerError.storedValueUnknown`, naming the column and the value: it is never read as a
/// default.
///
/// An alias that reuses a table column's name (`extract(epoch from created_at) AS created_at`)
/// is what a bare name in ORDER BY means, so such statements name the table there
/// (`ORDER BY sessions.created_at`): the index keeps its order.
///
///     let row = rows.row(0)
///     let id: String = try row["id"]
///     let profile: ClientProfile = try row.known("profile", table: "clients")
public struct PGRow {
    let rows: PGRows
    let index: Int

    /// The named column, required.
    public subscript<T: PGValue>(_ name: String) -> T {
        get throws(PGError) {
            guard let v: T = try self[name] else { throw PGError(sqlstate: "XX000", message: "column \(name) of the result is NULL") }
            return v
        }
    }

    /// The named column; NULL is nil.
    public subscript<T: PGValue>(_ name: String) -> T? {
        get throws(PGError) {
            guard let s = try text(name) else { return nil }
            guard let v = T(pgText: s) else { throw PGError(sqlstate: "XX000", message: "column \(name) of the result is not a \(T.self)") }
            return v
        }
    }

    /// The named column as bytea; NULL is nil.
    public func bytes(_ name: String) throws(PGError) -> [UInt8]? {
        guard let s = try text(name) else { return nil }
        guard let b = PGText.bytea(s) else { throw PGError(sqlstate: "XX000", message: "column \(name) of the result is not bytea") }
        return b
    }

    /// The named column, an array selected as `array_to_string(col, ' ') AS col` (space-free
    /// elements: scopes, slugs, URLs); NULL is empty.
    public func words(_ name: String) throws(PGError) -> [String] {
        try text(name).map { $0.split(separator: " ").map(String.init) } ?? []
    }

    /// The named column of `table`, a stored enum value, required.
    public func known<T: RawRepresentable>(_ name: String, table: String) throws -> T where T.RawValue == String {
        guard let v: T = try known(name, table: table) else { throw PGError(sqlstate: "XX000", message: "column \(name) of the result is NULL") }
        return v
    }

    /// The named column of `table`, a stored enum value; NULL is nil. A value this release does
    /// not know (written by a newer replica, or by hand) throws, naming the column and the value.
    public func known<T: RawRepresentable>(_ name: String, table: String) throws -> T? where T.RawValue == String {
        try text(name).map { try Self.known($0, name, table: table) }
    }

    /// The named column of `table`, an array of stored enum values (selected as for `words`),
    /// every one of them known.
    public func knownWords<T: RawRepresentable>(_ name: String, table: String) throws -> [T] where T.RawValue == String {
        try words(name).map { try Self.known($0, name, table: table) }
    }

    private static func known<T: RawRepresentable>(_ s: String, _ name: String, table: String) throws -> T where T.RawValue == String {
        guard let v = T(rawValue: s) else { throw BrokerError.storedValueUnknown(column: "\(table).\(name)", value: s) }
        return v
    }

    private func text(_ name: String) throws(PGError) -> String? {
        guard let column = rows.column(name) else {
            throw PGError(sqlstate: "XX000", message: "the statement selects no column named \(name)")
        }
        return rows.string(index, column)
    }
}

extension PGRows {
    public func row(_ i: Int) -> PGRow { PGRow(rows: self, index: i) }

    /// Every row, decoded by `body`.
    public func map<T>(_ body: (PGRow) throws -> T) throws -> [T] {
        try (0..<count).map { i in try body(row(i)) }
    }

    /// The first row decoded by `body`, or nil when there is none.
    public func first<T>(_ body: (PGRow) throws -> T) throws -> T? {
        guard count > 0 else { return nil }
        return try body(row(0))
    }
}
