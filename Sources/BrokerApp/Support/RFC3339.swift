import Foundation

/// RFC3339 formats and parses UTC timestamps (`2026-11-30T13:45:00Z`), the form every time in
/// the API takes.
enum RFC3339 {
    /// The UTC calendar fields of a Unix time, by arithmetic (days to civil date, H. Hinnant's
    /// algorithm): glibc's gmtime_r takes a process-wide lock (`tzset_lock`) on every call, which
    /// every HTTP thread handing out a token would wait on.
    struct Fields: Equatable {
        let year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
    }

    static func fields(_ t: Int) -> Fields {
        let days = t >= 0 ? t / 86_400 : -((-t + 86_399) / 86_400)
        let secs = t - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let month = mp < 10 ? mp + 3 : mp - 9
        return Fields(year: yoe + era * 400 + (month <= 2 ? 1 : 0), month: month, day: doy - (153 * mp + 2) / 5 + 1,
                      hour: secs / 3_600, minute: secs % 3_600 / 60, second: secs % 60)
    }

    static func format(_ d: Date, fractional: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(26)
        write(d, into: &bytes, millis: fractional)
        return String(decoding: bytes[1..<(bytes.count - 1)], as: UTF8.self)
    }

    /// Appends `"2026-11-30T13:45:00Z"` (quoted) to a JSON buffer without building a String.
    /// Writes `d` quoted; with `millis`, to the millisecond (rounded down, never later than `d`).
    static func write(_ d: Date, into bytes: inout [UInt8], millis: Bool = false) {
        let t = Int(d.timeIntervalSince1970.rounded(.down))
        let f = fields(t)
        func digits(_ v: Int, _ width: Int) {
            var div = 1
            for _ in 1..<width { div *= 10 }
            var v = v
            while div > 0 {
                bytes.append(UInt8(48 + (v / div) % 10))
                v %= div * 10
                div /= 10
            }
        }
        bytes.append(0x22)
        digits(f.year, 4); bytes.append(UInt8(ascii: "-"))
        digits(f.month, 2); bytes.append(UInt8(ascii: "-"))
        digits(f.day, 2); bytes.append(UInt8(ascii: "T"))
        digits(f.hour, 2); bytes.append(UInt8(ascii: ":"))
        digits(f.minute, 2); bytes.append(UInt8(ascii: ":"))
        digits(f.second, 2)
        if millis {
            bytes.append(UInt8(ascii: "."))
            digits(Int(min(999, ((d.timeIntervalSince1970 - Double(t)) * 1000).rounded(.down))), 3)
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
