import Foundation

/// DueDecision is what the refresh engine does with a session whose timer fired, decided under
/// the session's lock from the row re-read there.
public enum DueDecision: Sendable, Equatable {
    /// Still due: spend the refresh token.
    case refresh
    /// Somebody (another replica, an on-demand request) moved the schedule: wait until then.
    case reschedule(Date)
    /// Not active any more, or nothing to refresh with: forget it.
    case drop

    public static func decide(_ s: Session, now: Date) -> DueDecision {
        guard s.state == .active, s.refreshToken != nil, let due = s.nextRefreshAt else { return .drop }
        return due > now ? .reschedule(due) : .refresh
    }
}
