import Foundation

/// RFC 9110 §10.2.3 Retry-After: delay-seconds or an HTTP-date, as seconds from `now`.
enum RetryAfter {
    static func seconds(_ value: String?, now: Date = Date()) -> Double? {
        guard let v = value?.trimmingCharacters(in: .whitespaces), !v.isEmpty else { return nil }
        if let n = Int(v), n >= 0 { return Double(n) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.date(from: v).map { max(0, $0.timeIntervalSince(now)) }
    }
}
