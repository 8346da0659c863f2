import Foundation

/// RefreshAttempt is the durable record of one presentation of a session's refresh token,
/// written (and committed) before the IdP is called. Whoever finds it unresolved knows the token
/// may already be spent and must not present it again: only its owner's answer, or a
/// resolution once the owner's patience has run out, clears it.
public struct RefreshAttempt: Sendable, Equatable {
    /// Unique per attempt; the answer of attempt X is only ever applied to a row recording X.
    /// Attempts are matched by id alone: `startedAt` comes back from the database rounded.
    public let id: String
    /// When the request was about to be sent.
    public let startedAt: Date

    public init(id: String, startedAt: Date) {
        self.id = id
        self.startedAt = startedAt
    }
}
