import Foundation

/// RFC3339 formats and parses UTC timestamps (`2026-11-30T13:45:00Z`), the form every time in
/// the API takes.
enum RFC3339 {
    static func format(_ d: Date, fractional: Bool = false) -> String {
        var t = time_t(d.timeIntervalSince1970.rounded(.down))
        var tm = tm()
        gmtime_r(&t, &tm)
        var s = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec)
        if fractional { s += String(format: ".%03d", Int((d.timeIntervalSince1970 - Double(t)) * 1000)) }
        return s + "Z"
    }

    static func parse(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        if let d = f.date(from: s) { return d }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s)
    }

    static func optional(_ d: Date?) -> String { d.map { JSONText.quote(format($0)) } ?? "null" }
}
