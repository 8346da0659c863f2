import BrokerCore
import Foundation

/// DueRow is a due session's row as read with the other sessions its timer tick fired (one
/// round trip for the tick), and when. A job that starts soon enough decides on it instead of
/// reading the row again: its attempt is written only if the row is still at this version, so
/// an older row costs a refused write, never a second presentation. What moves without a
/// version — `last_used_at`, marked every 0.25 s — is at most `maxAge` older than a fresh read
/// would see; past that the job reads the row itself.
public struct DueRow: Sendable {
    public let session: Session
    public let readAt: Date

    public static let maxAge: TimeInterval = 2

    public init(_ session: Session, readAt: Date) {
        self.session = session
        self.readAt = readAt
    }

    /// The row, if read no longer than `maxAge` before `now`.
    public func fresh(_ now: Date) -> Session? { now.timeIntervalSince(readAt) <= Self.maxAge ? session : nil }
}
