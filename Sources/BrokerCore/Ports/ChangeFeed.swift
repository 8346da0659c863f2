/// ChangeFeed carries "this changed, drop your copy" between replicas (LISTEN/NOTIFY in
/// PostgreSQL). Delivery is at-most-once and fast; caches also expire on their own.
import Foundation

public protocol ChangeFeed: Sendable {
    /// Announces a change to every replica. This replica's own subscriber has it before
    /// `publish` returns (a replica reads its own writes); it may come to it again later.
    func publish(_ change: Change)
    /// Starts delivering changes published by any replica, this one included, to `handler`
    /// on a background thread (and this replica's own in the publishing thread). Handlers are
    /// idempotent: a change may arrive twice.
    func subscribe(_ handler: @escaping @Sendable (Change) -> Void)
}

/// Change names what another replica must forget.
public enum Change: Sendable, Equatable {
    case session(tenant: String, id: String)
    case apiKey(id: String)
    case client(tenant: String, id: String)
    case tenant(String)
    /// A subject's latest session may have changed (a new session was stored).
    case subject(tenant: String, client: String, subject: String)
    /// An end user's latest session may have changed (a new session was stored for them).
    case endUser(tenant: String, client: String, endUser: String)
    /// The client learned a new DPoP nonce from its authorization server: replicas read it
    /// again from the store (the notice carries no nonce, so that none reaches a log).
    case dpopNonce(tenant: String, client: String)
    /// Changes may have been missed (the feed reconnected): drop everything cached.
    case resync
    /// The session was written at `version` (nil: unknown) and its next refresh is now at `at`
    /// (nil: never, it is no longer active). Replicas drop any older copy they hold: after a
    /// refresh commits anywhere, nobody hands out the superseded token.
    case scheduled(tenant: String, id: String, client: String, at: Date?, version: Int64? = nil)
}
