import Foundation

/// RFC3339 formats and parses UTC timestamps (`2026-11-30T13:45:00Z`), the form every time in
/// the API takes.
enum RFC3339 {
    static func format(_ d: Date, fractional: Bool = false) -> String {
        var t = time_t(d.timeIntervalSince1970.rounded(.down))
        var tm = tm()
        gmtime_r(&t, &tm)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        var s = pad(tm.tm_year + 1900, 4) + "-" + pad(tm.tm_mon + 1, 2) + "-" + pad(tm.tm_mday, 2) + "T" + pad(tm.tm_hour, 2) + ":"
            + pad(tm.tm_min, 2) + ":" + pad(tm.tm_sec, 2)
        if fractional { s += "." + pad(Int32((d.timeIntervalSince1970 - Double(t)) * 1000), 3) }
        return s + "Z"
    }

    /// Appends `"2026-11-30T13:45:00Z"` (quoted) to a JSON buffer without building a String.
    /// Writes `d` quoted; with `millis`, to the millisecond (rounded down, never later than `d`).
    static func write(_ d: Date, into bytes: inout [UInt8], millis: Bool = false) {
        var t = time_t(d.timeIntervalSince1970.rounded(.down))
        var tm = tm()
        gmtime_r(&t, &tm)
        func digits(_ v: Int32, _ width: Int) {
            var div: Int32 = 1
            for _ in 1..<width { div *= 10 }
            var v = v
            while div > 0 {
                bytes.append(UInt8(48 + (v / div) % 10))
                v %= div * 10
                div /= 10
            }
        }
        bytes.append(0x22)
        digits(tm.tm_year + 1900, 4); bytes.append(UInt8(ascii: "-"))
        digits(tm.tm_mon + 1, 2); bytes.append(UInt8(ascii: "-"))
        digits(tm.tm_mday, 2); bytes.append(UInt8(ascii: "T"))
        digits(tm.tm_hour, 2); bytes.append(UInt8(ascii: ":"))
        digits(tm.tm_min, 2); bytes.append(UInt8(ascii: ":"))
        digits(tm.tm_sec, 2)
        if millis {
            bytes.append(UInt8(ascii: "."))
            digits(Int32(min(999, ((d.timeIntervalSince1970 - Double(t)) * 1000).rounded(.down))), 3)
        }
        bytes += [UInt8(ascii: "Z"), 0x22]
    }

    static func parse(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        if let d = f.date(from: s) { return d }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s)
    }

    static func optional(_ d: Date?) -> String { d.map { JSONText.quote(format($0)) } ?? "null" }
}
