import Foundation

/// SessionStore keeps sessions; every call carries the tenant. Implementations seal token
/// material at rest and hand it back unsealed, in memory only.
///
/// Implementations are thread-safe. Failures are thrown as BrokerError
/// (`storeUnavailable`, `refreshBusy`, `conflict`).
public protocol SessionStore: Sendable {
    func session(tenant: String, id: String) throws -> Session?
    /// The sessions among `ids` that exist in `tenant`, in no particular order.
    func sessions(tenant: String, ids: [String]) throws -> [Session]
    /// The most recently created active session of `subject` at `client`, else the most recent one.
    func latestSession(tenant: String, client: String, subject: String) throws -> Session?
    /// The same choice among the sessions of the application's user `endUser` at `client`: the
    /// most recently created active one, else the most recent one whatever its state.
    func latestSession(tenant: String, client: String, endUser: String) throws -> Session?
    func insert(_ session: Session) throws

    /// Runs `body` while holding the session's cross-replica refresh lock, waiting at most
    /// `timeout` for it (0: only try, and fail at once with `refreshBusy` when it is held), with
    /// the row re-read under the lock. `body` returns the session to
    /// write (or nil to leave the row as it is) and its result; the write, its version bump and
    /// the release of the lock commit together. When `body` throws, nothing is written and the
    /// lock is released.
    ///
    /// One holder at a time, across every replica, each seeing the previous holder's write: one
    /// of the two guards of a refresh's steps, with `writeIfUnchanged` (RefreshFlight says which
    /// guards what, and when each is used). A store shared by several replicas
    /// announces a written session's schedule (`Change.scheduled`) atomically with the write,
    /// so that a write rolled back is never announced.
    ///
    /// The written version is the locked row's plus one, or more for a write re-applied after a
    /// change of database server (FailoverReapply).
    ///
    /// `revoke` lists refresh tokens to queue for revocation at the session's IdP (the durable
    /// outbox), in the same transaction: a token received and not kept is never dropped.
    func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval,
                                   _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T

    /// Writes `write` over the row as `seen` — one the caller read or wrote, with no lock taken
    /// and nothing re-read — if the row is still at `seen`'s version; true when it
    /// was written (announced like a write under the lock), false when the row moved on or the
    /// write would change the session's state, which are left to the lock. A writer holding the
    /// lock meanwhile is waited for, so the write is as if made under the lock right after.
    ///
    /// The other guard of a refresh's steps (RefreshFlight): an attempt's outcome over the row
    /// that recorded it, and a due session's start over the row as read — two replicas deciding
    /// on the same row cannot both write.
    func writeIfUnchanged(_ write: Session, over seen: Session) throws -> Bool

    /// Records that sessions were used, in bulk (last_used_at).
    func touch(_ uses: [SessionUse]) throws

    /// Active sessions whose next refresh is before `before`, earliest first, across every
    /// tenant: the refresh engine's loader, and the one query that is not scoped to a tenant.
    func dueSessions(before: Date, limit: Int) throws -> [DueSession]

    /// Active sessions whose grant the IdP ends before `before` (its absolute refresh-token
    /// lifetime), across every tenant.
    func countGrantsExpiring(before: Date) throws -> Int
}

extension SessionStore {
    /// `withRefreshLockQueuing` with nothing to revoke.
    public func withRefreshLock<T>(tenant: String, id: String, timeout: TimeInterval,
                                   _ body: (Session) throws -> (write: Session?, result: T)) throws -> T {
        try withRefreshLockQueuing(tenant: tenant, id: id, timeout: timeout) { locked in
            let (write, result) = try body(locked)
            return (write, [], result)
        }
    }
}

/// DueSession is a session the refresh engine should schedule.
public struct DueSession: Sendable, Equatable {
    public let tenant: String
    public let id: String
    public let client: String
    public let at: Date

    public init(tenant: String, id: String, client: String, at: Date) {
        self.tenant = tenant
        self.id = id
        self.client = client
        self.at = at
    }
}

/// SessionUse says a session was handed out at an instant.
public struct SessionUse: Sendable, Equatable {
    public let tenant: String
    public let id: String
    public let at: Date

    public init(tenant: String, id: String, at: Date) {
        self.tenant = tenant
        self.id = id
        self.at = at
    }
}
