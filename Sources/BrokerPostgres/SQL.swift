import Foundation

/// SQL is a query whose interpolated values become `$n` parameters — never text spliced into
/// the statement. Dates travel as epoch seconds through `to_timestamp`, byte strings as bytea
/// hex, string arrays as text[] literals.
///
///     let q: SQL = "SELECT 1 FROM sessions WHERE tenant_id = \(tenant) AND id = \(id)"
public struct SQL: ExpressibleByStringInterpolation, Sendable {
    public var text: String
    public var binds: [String?]

    public init(stringLiteral value: String) {
        text = value
        binds = []
    }

    public init(stringInterpolation s: Interpolation) {
        text = s.text
        binds = s.binds
    }

    public struct Interpolation: StringInterpolationProtocol {
        var text = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 4)
        }

        public mutating func appendLiteral(_ literal: String) { text += literal }

        mutating func bind(_ value: String?, cast: String = "") {
            binds.append(value)
            text += "$\(binds.count)\(cast)"
        }

        public mutating func appendInterpolation(_ v: String?) { bind(v) }
        public mutating func appendInterpolation(_ v: Int) { bind(String(v)) }
        public mutating func appendInterpolation(_ v: Int64) { bind(String(v)) }
        public mutating func appendInterpolation(_ v: Int?) { bind(v.map(String.init)) }
        public mutating func appendInterpolation(_ v: Double?) { bind(v.map { String($0) }, cast: "::float8") }
        public mutating func appendInterpolation(_ v: Bool) { bind(v ? "t" : "f", cast: "::boolean") }

        public mutating func appendInterpolation(_ v: Date?) {
            binds.append(v.map { String($0.timeIntervalSince1970) })
            text += "to_timestamp($\(binds.count)::float8)"
        }

        public mutating func appendInterpolation(_ v: [UInt8]?) {
            bind(v.map { "\\x" + PGText.hex($0) }, cast: "::bytea")
        }

        public mutating func appendInterpolation(_ v: [String]) { bind(PGText.arrayLiteral(v), cast: "::text[]") }
        public mutating func appendInterpolation(_ v: [String?]) { bind(PGText.arrayLiteral(v), cast: "::text[]") }
        public mutating func appendInterpolation(_ v: [Double]) { bind(PGText.arrayLiteral(v.map { String($0) }), cast: "::float8[]") }
        public mutating func appendInterpolation(_ v: [Int64]) { bind(PGText.arrayLiteral(v.map { String($0) }), cast: "::bigint[]") }

        /// Splices another query's text with its parameters, renumbered after ours: a fragment
        /// (a shared WHERE clause) keeps its values as binds.
        public mutating func appendInterpolation(_ fragment: SQL) {
            let offset = binds.count
            var out = "", digits = ""
            var inParameter = false
            for ch in fragment.text + " " {
                if inParameter, ch.isASCII, ch.isNumber { digits.append(ch); continue }
                if inParameter {
                    out += "$" + (Int(digits).map { String($0 + offset) } ?? "")
                    inParameter = false
                    digits = ""
                }
                if ch == "$" { inParameter = true } else { out.append(ch) }
            }
            text += String(out.dropLast())
            binds += fragment.binds
        }

        /// Splices trusted SQL text (a fragment built by the store itself, never user input).
        public mutating func appendInterpolation(raw: String) { text += raw }
    }
}
