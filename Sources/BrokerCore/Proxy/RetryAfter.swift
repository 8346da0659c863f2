import Foundation

/// RetryAfter reads an upstream's `Retry-After` (RFC 9110 §10.2.3): delta-seconds, or an
/// HTTP-date counted against `now`. The wait is bounded, so that an upstream cannot shut a
/// client out for days by mistake or malice.
public enum RetryAfter {
    /// The longest wait honoured.
    public static let cap: TimeInterval = 3600

    /// Seconds to wait (0 for a date already past), or nil when the value is neither form.
    public static func seconds(_ value: String, now: Date, cap: TimeInterval = cap) -> TimeInterval? {
        let v = value.trimmingCharacters(in: .whitespaces)
        if !v.isEmpty, v.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            guard let n = Double(v) else { return cap }
            return min(n, cap)
        }
        guard let date = httpDate(v) else { return nil }
        return min(max(0, date.timeIntervalSince(now)), cap)
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 §5.6.7 requires senders
    /// to use.
    static func httpDate(_ s: String) -> Date? {
        let parts = s.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int(parts[1]), let year = Int(parts[3]),
              let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].firstIndex(of: String(parts[2])) else { return nil }
        let hms = parts[4].split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (1...31).contains(day), (0...23).contains(hms[0]), (0...59).contains(hms[1]), (0...60).contains(hms[2]) else { return nil }
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        return cal.date(from: DateComponents(year: year, month: month + 1, day: day, hour: hms[0], minute: hms[1], second: hms[2]))
    }
}
