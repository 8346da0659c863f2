import Foundation

public enum LogLevel: String, Sendable, Comparable {
    case debug, info, warn, error
    var rank: Int { [.debug: 0, .info: 1, .warn: 2, .error: 3][self]! }
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// Logger writes one JSON object a line to stderr, with OpenTelemetry's names for the record's
/// own fields (`timestamp`, `severity_text`, `body`), then the fields. It is a value: metadata
/// travels with it (`with(...)`). Callers pass ids, codes and counts — never a token, a key or a
/// secret; there is no API that takes a request body. The fields that are counts, durations or
/// statuses are written as JSON numbers; every value is cut at `maxValue` characters.
public struct Logger: Sendable {
    public let level: LogLevel
    private let metadata: [(String, String)]
    private static let lock = NSLock()

    public init(level: LogLevel, metadata: [(String, String)] = []) {
        self.level = level
        self.metadata = metadata
    }

    public func with(_ fields: (String, String)...) -> Logger { Logger(level: level, metadata: metadata + fields) }

    public func debug(_ msg: String, _ fields: (String, String)...) { write(.debug, msg, fields) }
    public func info(_ msg: String, _ fields: (String, String)...) { write(.info, msg, fields) }
    public func warn(_ msg: String, _ fields: (String, String)...) { write(.warn, msg, fields) }
    public func error(_ msg: String, _ fields: (String, String)...) { write(.error, msg, fields) }

    /// One line at level `l`, its fields given as an array.
    func write(_ l: LogLevel, _ msg: String, _ fields: [(String, String)]) {
        guard l >= level else { return }
        var line = "{\"timestamp\":\(JSONText.quote(RFC3339.format(Date(), fractional: true))),\"severity_text\":\"\(l.rawValue.uppercased())\","
            + "\"body\":\(JSONText.quote(msg))"
        for (k, v) in metadata + fields { line += ",\(JSONText.quote(k)):\(Self.value(k, v))" }
        line += "}"
        let bytes = Self.oneLine(Array(line.utf8)) + [0x0A]
        Self.lock.withLock { FileHandle.standardError.write(Data(bytes)) }
    }

    /// The line with every character that some readers take for a line break — the C1 controls
    /// U+0080…U+009F (NEL among them), U+2028 and U+2029 — written as a `\u` escape. They can
    /// only be inside JSON strings (a path a caller chose, say), where the escape means the same.
    static func oneLine(_ u: [UInt8]) -> [UInt8] {
        guard u.contains(where: { $0 == 0xC2 || $0 == 0xE2 }) else { return u }
        var out: [UInt8] = []
        out.reserveCapacity(u.count + 16)
        let hex = Array("0123456789abcdef".utf8)
        func escape(_ scalar: Int) {
            out += [0x5C, UInt8(ascii: "u")] + [12, 8, 4, 0].map { hex[(scalar >> $0) & 15] }
        }
        var i = 0
        while i < u.count {
            if u[i] == 0xC2, i + 1 < u.count, (0x80...0x9F).contains(u[i + 1]) {
                escape(Int(u[i + 1]))
                i += 2
            } else if u[i] == 0xE2, i + 2 < u.count, u[i + 1] == 0x80, u[i + 2] == 0xA8 || u[i + 2] == 0xA9 {
                escape(0x2000 | Int(u[i + 2] - 0x80))
                i += 3
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return out
    }

    /// Fields whose values are numbers (counts, durations, statuses, sizes).
    static let numeric: Set<String> = ["status", "ms", "count", "attempts", "total", "revoked", "failed", "deleted", "pending",
                                       "pid", "retry_after", "bytes", "sessions", "due", "loaded", "version",
                                       "failures", "seconds"]
    /// The longest value written (a 20,000-character path is cut, its length said).
    static let maxValue = 512

    /// The JSON of one value: a number for a numeric field that holds one, else a string, cut.
    static func value(_ key: String, _ v: String) -> String {
        if numeric.contains(key), let d = Double(v), d.isFinite {
            let u = Array(v.utf8)
            if u.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 }), !(u.count > 1 && u[0] == 48 && u[1] != 46) {   // JSON has no leading zeros
                return v
            }
        }
        guard v.count > maxValue else { return JSONText.quote(v) }
        return JSONText.quote(String(v.prefix(maxValue)) + "…(\(v.utf8.count) bytes)")
    }
}
