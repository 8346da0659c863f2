import Foundation
import Synchronization
import Testing

/// Every token the integration tests receive is checked for the life it promises, as the IdP's
/// `reuse_detected` counts refresh tokens presented twice: a hand-out that arrives with less
/// life left than the `min_ttl` it was asked with (at least one second when none was named)
/// fails the test that received it, and is counted for the run's record.
enum HandOutLife {
    static let short = Atomic<Int>(0)

    /// Checks a token document received at `receivedAt`; `minTTL` is what was asked (nil: none).
    static func check(_ doc: [String: Any], minTTL: Double?, receivedAt: Date = Date(),
                      sourceLocation: SourceLocation = #_sourceLocation) {
        guard let expiresIn = (doc["expires_in"] as? NSNumber)?.doubleValue,
              let at = (doc["expires_at"] as? String).flatMap(parse) else { return }
        let promised = max(minTTL ?? 1, 1)
        // expires_in is whole seconds counted down when written; the clock read here is the worker's.
        let left = at.timeIntervalSince(receivedAt)
        if expiresIn < promised || left < promised - 1 {
            short.add(1, ordering: .relaxed)
            Issue.record("a token arrived with \(left) s of life (expires_in \(expiresIn)) for a min_ttl of \(promised)",
                         sourceLocation: sourceLocation)
        }
    }

    private static func parse(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s) ?? ISO8601DateFormatter().date(from: s)
    }
}
