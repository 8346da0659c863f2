import BrokerCore
import Foundation
import Synchronization

/// InMemorySessionStore is the SessionStore for pure unit tests. Its refresh lock is a
/// per-session mutex-and-condition, so that it honours the same contract as PostgreSQL's
/// advisory lock: one holder per session, others wait up to the timeout. `held` is guarded by
/// `locks`, hence `@unchecked Sendable`.
public final class InMemorySessionStore: SessionStore, @unchecked Sendable {
    let rows = Mutex<[String: Session]>([:])
    private let locks = NSCondition()
    private var held = Set<String>()
    public let touched = Mutex<[SessionUse]>([])
    /// How many times the refresh lock was taken.
    public let lockings = Atomic<Int>(0)
    /// Refresh tokens queued for revocation at the IdP, in order.
    public let revoked = Mutex<[String]>([])
    /// The revocation outbox: entries and when each is next due.
    let outbox = Mutex<[String: (entry: PendingRevocation, due: Date)]>([:])

    public init() {}

    static func key(_ tenant: String, _ id: String) -> String { tenant + "\u{0}" + id }

    public func session(tenant: String, id: String) throws -> Session? { rows.withLock { $0[Self.key(tenant, id)] } }

    public func sessions(tenant: String, ids: [String]) throws -> [Session] {
        rows.withLock { r in ids.compactMap { r[Self.key(tenant, $0)] } }
    }

    public func latestSession(tenant: String, client: String, subject: String) throws -> Session? {
        rows.withLock { r in
            r.values.filter { $0.tenant == tenant && $0.client == client && $0.subject == subject }
                .max { ($0.state == .active ? 1 : 0, $0.createdAt) < ($1.state == .active ? 1 : 0, $1.createdAt) }
        }
    }

    public func latestSession(tenant: String, client: String, endUser: String) throws -> Session? {
        rows.withLock { r in
            r.values.filter { $0.tenant == tenant && $0.client == client && $0.endUser == endUser }
                .max { ($0.state == .active ? 1 : 0, $0.createdAt) < ($1.state == .active ? 1 : 0, $1.createdAt) }
        }
    }

    public func insert(_ s: Session) throws {
        try rows.withLock { r in
            guard r[Self.key(s.tenant, s.id)] == nil else { throw BrokerError.conflict(code: "conflict", message: "already exists") }
            r[Self.key(s.tenant, s.id)] = s
        }
    }

    public func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval,
                                          _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T {
        let k = Self.key(tenant, id)
        locks.lock()
        let deadline = Date().addingTimeInterval(timeout)
        while held.contains(k) {
            guard timeout > 0, locks.wait(until: deadline) else {
                locks.unlock()
                throw BrokerError.refreshBusy
            }
        }
        held.insert(k)
        locks.unlock()
        lockings.add(1, ordering: .relaxed)
        defer {
            locks.lock()
            held.remove(k)
            locks.broadcast()
            locks.unlock()
        }
        guard let locked = rows.withLock({ $0[k] }) else { throw BrokerError.notFound("session") }
        let (write, revoke, result) = try body(locked)
        if let w = write {
            precondition(w.version > locked.version, "a session write must move the version forward")
            rows.withLock { $0[k] = Self.landing(w, over: $0[k]) }
        }
        revoked.withLock { $0 += revoke }
        return result
    }

    public func writeIfUnchanged(_ write: Session, over seen: Session) throws -> Bool {
        guard write.state == seen.state else { return false }
        precondition(write.version == seen.version + 1, "a session write must bump the version by one")
        let k = Self.key(seen.tenant, seen.id)
        // As PostgreSQL's row lock: a holder of the refresh lock finishes first.
        locks.lock()
        while held.contains(k) { locks.wait() }
        let written = rows.withLock { r -> Bool in
            guard r[k]?.version == seen.version else { return false }
            r[k] = Self.landing(write, over: r[k])
            return true
        }
        locks.unlock()
        return written
    }

    /// Puts `s` in place of the row, whatever its version: a test's stand-in for a database
    /// server that lacks writes (a failover under asynchronous replication).
    public func replace(_ s: Session) { rows.withLock { $0[Self.key(s.tenant, s.id)] = s } }

    /// A write as it lands over the row as it is: as PostgreSQL's `greatest`, a use marked
    /// meanwhile (touch moves no version) is kept.
    static func landing(_ write: Session, over current: Session?) -> Session {
        var w = write
        if let marked = current?.lastUsedAt, w.lastUsedAt.map({ $0 < marked }) ?? true { w.lastUsedAt = marked }
        return w
    }

    public func dueSessions(before: Date, limit: Int) throws -> [DueSession] {
        rows.withLock { r in
            r.values.filter { $0.state == .active && ($0.nextRefreshAt.map { $0 < before } ?? false) }
                .sorted { $0.nextRefreshAt! < $1.nextRefreshAt! }.prefix(limit)
                .map { DueSession(tenant: $0.tenant, id: $0.id, client: $0.client, at: $0.nextRefreshAt!) }
        }
    }

    public func countGrantsExpiring(before: Date) throws -> Int {
        rows.withLock { r in r.values.filter { $0.state == .active && ($0.grantExpiresAt.map { $0 < before } ?? false) }.count }
    }

    public func touch(_ uses: [SessionUse]) throws {
        touched.withLock { $0 += uses }
        rows.withLock { r in
            for u in uses { r[Self.key(u.tenant, u.id)]?.lastUsedAt = u.at }
        }
    }
}
