import Foundation

/// Backlog is the shared work every replica takes from and no replica owns: revocations the
/// IdP has not confirmed yet (the outbox) and bulk sign-outs still running. Its age is what
/// an operator alerts on.
public struct Backlog: Sendable, Equatable {
    public var outboxDepth: Int
    /// When the oldest unconfirmed revocation was queued; nil when none waits.
    public var outboxOldest: Date?
    public var signoutJobsRunning: Int
    public var signoutItemsPending: Int

    public init(outboxDepth: Int, outboxOldest: Date?, signoutJobsRunning: Int, signoutItemsPending: Int) {
        (self.outboxDepth, self.outboxOldest, self.signoutJobsRunning, self.signoutItemsPending) =
            (outboxDepth, outboxOldest, signoutJobsRunning, signoutItemsPending)
    }
}
