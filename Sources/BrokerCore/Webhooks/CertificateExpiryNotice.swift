import Foundation

/// CertificateExpiryNotice decides when a client's TLS certificate (RFC 8705) is announced as
/// expiring (`client.certificate_expiring`): once per certificate and threshold — 30, 7 and 1
/// days before its `notAfter` — telling the nearest threshold crossed. A certificate first seen
/// with 5 days left is told once (7 days), then once more a day before; a replaced certificate
/// starts over (the store forgets what was told when the thumbprint changes).
public enum CertificateExpiryNotice {
    /// Days before notAfter, farthest first.
    public static let thresholds = [30, 7, 1]

    /// How far ahead the store looks: the farthest threshold.
    public static var horizon: TimeInterval { TimeInterval(thresholds[0]) * 86_400 }

    /// The threshold to announce now, in days, or nil: none crossed, or the nearest crossed one
    /// (or a nearer one) was already told (`told`, in days).
    public static func due(notAfter: Date, told: Int?, now: Date) -> Int? {
        let left = notAfter.timeIntervalSince(now)
        guard let crossed = thresholds.last(where: { left <= TimeInterval($0) * 86_400 }) else { return nil }
        if let told, told <= crossed { return nil }
        return crossed
    }
}
