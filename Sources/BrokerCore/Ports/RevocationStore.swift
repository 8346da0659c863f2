import Foundation

/// RevocationStore ends sessions and keeps the durable outbox of their tokens' revocation at
/// the IdP. Thread-safe.
public protocol RevocationStore: Sendable {
    /// Under the session's refresh lock (waiting at most `timeout`, so that a refresh running
    /// now finishes first and its new tokens are the ones revoked): marks the session revoked,
    /// erases its token material, queues its refresh and access tokens for the IdP and
    /// announces the change to every replica — one transaction. Returns the session as it was
    /// before (tokens included, in memory only) and after, and the revocations queued; an
    /// already revoked session queues none. The entries come due for `claimDueRevocations` 30 s
    /// later: the caller delivers them at once, and the outbox is for when it could not.
    func revoke(tenant: String, id: String, timeout: TimeInterval, now: Date) throws
        -> (before: Session, after: Session, queued: [PendingRevocation])

    /// The bulk form, for sign-out jobs: in one transaction, revokes every listed session of the
    /// tenant whose refresh lock is free right now, exactly as `revoke` does one by one (already
    /// revoked ones come back unchanged, queuing nothing). The ids it left alone — lock busy, or
    /// no such session — are for the caller to revoke one by one.
    func revokeMany(tenant: String, ids: [String], now: Date) throws
        -> (revoked: [(before: Session, after: Session, queued: [PendingRevocation])], left: [String])

    /// How many of the session's revocations the IdP has not confirmed yet.
    func pendingRevocations(tenant: String, session: String) throws -> Int

    /// Claims up to `limit` due revocations across every tenant (no other replica gets them
    /// until `lease` has passed), counting the attempt.
    func claimDueRevocations(now: Date, lease: TimeInterval, limit: Int) throws -> [PendingRevocation]

    /// The IdP confirmed: forget the entries (all of one tenant).
    func revocationsDelivered(tenant: String, ids: [String]) throws

    /// The IdP could not be reached or refused: try again at `next`.
    func revocationFailed(tenant: String, id: String, next: Date, reason: String) throws
}
