import Foundation

public enum LogLevel: String, Sendable, Comparable {
    case debug, info, warn, error
    var rank: Int { [.debug: 0, .info: 1, .warn: 2, .error: 3][self]! }
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// Logger writes one JSON object a line to stderr. It is a value: metadata travels with it
/// (`with(...)`). Callers pass ids, codes and counts — never a token, a key or a secret; there
/// is no API that takes a request body.
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
        var line = "{\"ts\":\(JSONText.quote(RFC3339.format(Date(), fractional: true))),\"level\":\"\(l.rawValue)\",\"msg\":\(JSONText.quote(msg))"
        for (k, v) in metadata + fields { line += ",\(JSONText.quote(k)):\(JSONText.quote(v))" }
        line += "}\n"
        Self.lock.withLock { FileHandle.standardError.write(Data(line.utf8)) }
    }
}
