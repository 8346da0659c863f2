import BrokerCore
import Foundation

/// Revocation and the outbox, in memory: the same contract as PostgreSQL's (RevocationStoreContract).
extension InMemorySessionStore: RevocationStore {
    public func revoke(tenant: String, id: String, timeout: TimeInterval, now: Date) throws
        -> (before: Session, after: Session, queued: [PendingRevocation]) {
        try withRefreshLockQueuing(tenant: tenant, id: id, timeout: timeout) { before in
            guard before.state != .revoked else { return (nil, [], (before, before, [])) }
            let queued = before.revocableTokens(at: now).map { token, hint in
                PendingRevocation(id: "rvk_" + UUID().uuidString, tenant: tenant, session: id, client: before.client, token: token, hint: hint, attempts: 0)
            }
            outbox.withLock { o in for q in queued { o[q.id] = (q, now.addingTimeInterval(30)) } }   // the caller delivers first
            let after = before.ended(.revoked, reason: nil, lastError: nil, keepIDToken: false)
            return (after, [], (before, after, queued))
        }
    }

    public func revokeMany(tenant: String, ids: [String], now: Date) throws
        -> (revoked: [(before: Session, after: Session, queued: [PendingRevocation])], left: [String]) {
        var revoked: [(before: Session, after: Session, queued: [PendingRevocation])] = [], left: [String] = []
        for id in ids {
            do { revoked.append(try revoke(tenant: tenant, id: id, timeout: 0, now: now)) } catch { left.append(id) }
        }
        return (revoked, left)
    }

    public func pendingRevocations(tenant: String, session: String) throws -> Int {
        outbox.withLock { $0.values.filter { $0.entry.tenant == tenant && $0.entry.session == session }.count }
    }

    public func claimDueRevocations(now: Date, lease: TimeInterval, limit: Int) throws -> [PendingRevocation] {
        outbox.withLock { o in
            let due = o.filter { $0.value.due <= now }.sorted { $0.value.due < $1.value.due }.prefix(limit)
            return due.map { id, held in
                let e = held.entry
                let claimed = PendingRevocation(id: e.id, tenant: e.tenant, session: e.session, client: e.client, token: e.token, hint: e.hint,
                                                attempts: e.attempts + 1)
                o[id] = (claimed, now.addingTimeInterval(lease))
                return claimed
            }
        }
    }

    public func revocationsDelivered(tenant: String, ids: [String]) throws {
        outbox.withLock { o in for id in ids where o[id]?.entry.tenant == tenant { o[id] = nil } }
    }

    public func revocationFailed(tenant: String, id: String, next: Date, reason: String) throws {
        outbox.withLock { o in if let held = o[id], held.entry.tenant == tenant { o[id] = (held.entry, next) } }
    }
}

/// The admin listing, in memory: newest first by (created_at, id), metadata only.
extension InMemorySessionStore: SessionCatalog {
    public func sessions(tenant: String, matching q: SessionQuery) throws -> (sessions: [Session], next: SessionQuery.Cursor?) {
        func micros(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1_000_000).rounded()) }
        let page = rows.withLock { r in
            r.values.filter { s in
                s.tenant == tenant && (q.subject.map { $0 == s.subject } ?? true) && (q.client.map { $0 == s.client } ?? true)
                    && (q.endUser.map { $0 == s.endUser } ?? true)
                    && (q.sid.map { $0 == s.claims.sid } ?? true) && (q.state.map { $0 == s.state } ?? true)
                    && (q.createdBefore.map { s.createdAt < $0 } ?? true) && (q.createdAfter.map { s.createdAt >= $0 } ?? true)
                    && (q.idleSince.map { (s.lastUsedAt ?? s.createdAt) < $0 } ?? true)
                    && (q.after.map { (micros(s.createdAt), s.id) < ($0.createdMicros, $0.id) } ?? true)
            }
            .sorted { (micros($0.createdAt), $0.id) > (micros($1.createdAt), $1.id) }
        }
        let shown = page.prefix(q.limit).map { s -> Session in
            var m = s
            m.accessToken = nil
            m.refreshToken = nil
            m.idToken = nil
            return m
        }
        guard page.count > q.limit, let last = shown.last else { return (Array(shown), nil) }
        return (Array(shown), SessionQuery.Cursor(createdMicros: micros(last.createdAt), id: last.id))
    }

    /// Every stored session (the in-memory sign-out store snapshots from them).
    public func all() -> [Session] { rows.withLock { Array($0.values) } }
}
