import Foundation

/// DueOutcome is what became of a due session: when it is next due (nil: never), or busy —
/// another replica holds its lock right now.
public enum DueOutcome: Sendable, Equatable {
    case next(Date?)
    case busy
}
