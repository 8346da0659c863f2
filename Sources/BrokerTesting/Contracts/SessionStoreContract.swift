import BrokerCore
import Foundation
import Synchronization

/// SessionStoreContract is the behaviour every SessionStore must show, run by the unit tests
/// against InMemorySessionStore and by the adapter tests against PostgreSQL. Every check uses
/// two tenants, which proves isolation. A violated expectation throws a Contract.Violation.
public enum SessionStoreContract {
    static func expect(_ ok: Bool, _ what: String) throws { try Contract.expect(ok, what) }

    /// A session of `tenant` with tokens and timestamps, at a fixed instant.
    public static func sample(tenant: String, client: String = "app", subject: String = "alice", id: String? = nil,
                              createdAt: Date = Date(timeIntervalSince1970: 1_800_000_000), endUser: String? = nil) -> Session {
        var rng = SystemRandomNumberGenerator()
        return Session(tenant: tenant, id: id ?? Identifiers.session(using: &rng), client: client, subject: subject,
                       issuer: "https://idp.example", scopes: ["openid", "offline_access"],
                       claims: IdentityClaims(sid: "sid-1", email: "a@example.com", authTime: createdAt),
                       accessToken: "access-" + UUID().uuidString, accessExpiresAt: createdAt.addingTimeInterval(3600), accessLifetime: 3600,
                       refreshToken: "refresh-" + UUID().uuidString, idToken: "id-" + UUID().uuidString,
                       nextRefreshAt: createdAt.addingTimeInterval(3300), grantedAt: createdAt, createdAt: createdAt, endUser: endUser)
    }

    static func same(_ a: Session, _ b: Session) -> Bool {
        func near(_ x: Date?, _ y: Date?) -> Bool {
            switch (x, y) {
            case (nil, nil): true
            case (let x?, let y?): abs(x.timeIntervalSince(y)) < 0.001
            default: false
            }
        }
        return a.tenant == b.tenant && a.id == b.id && a.client == b.client && a.subject == b.subject && a.issuer == b.issuer
            && a.scopes == b.scopes && a.claims.sid == b.claims.sid && a.claims.email == b.claims.email && near(a.claims.authTime, b.claims.authTime)
            && a.accessToken == b.accessToken && near(a.accessExpiresAt, b.accessExpiresAt) && a.accessLifetime == b.accessLifetime
            && a.refreshToken == b.refreshToken && a.idToken == b.idToken && a.state == b.state && near(a.nextRefreshAt, b.nextRefreshAt)
            && a.version == b.version && a.failureCount == b.failureCount && a.lastError == b.lastError && near(a.grantedAt, b.grantedAt)
            && near(a.createdAt, b.createdAt) && a.endUser == b.endUser
    }

    /// Takes the session's lock on another thread and holds it until `release` is signalled,
    /// writing `write` (bumped) if given; returns when the lock is held, and a semaphore that
    /// signals once the holder has finished.
    static func holdLock(_ store: any SessionStore, _ s: Session, release: DispatchSemaphore,
                         writing refreshToken: String? = nil) -> DispatchSemaphore {
        let inside = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            // The holder's own failure shows in the caller's checks (the lock never held, the write missing).
            _ = try? store.withRefreshLock(tenant: s.tenant, id: s.id, timeout: 5) { locked -> (write: Session?, result: Int) in
                inside.signal()
                release.wait()
                guard let refreshToken else { return (nil, 0) }
                var w = locked
                w.version += 1
                w.refreshToken = refreshToken
                return (w, 0)
            }
            done.signal()
        }
        inside.wait()
        return done
    }

    /// What is inserted reads back whole, and only in its own tenant.
    public static func insertedSessionReadsBackOnlyInItsTenant(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        guard let back = try store.session(tenant: tenants.0, id: s.id) else { throw Contract.Violation(description: "inserted session not found") }
        try expect(same(back, s), "session did not read back as written")
        try expect(try store.session(tenant: tenants.1, id: s.id) == nil, "a session is visible from another tenant")
        try expect(try store.sessions(tenant: tenants.1, ids: [s.id]).isEmpty, "bulk read crosses tenants")
        try expect(try store.sessions(tenant: tenants.0, ids: [s.id, "ses_missing"]).map(\.id) == [s.id], "bulk read returns the wrong rows")
        try expect(try store.latestSession(tenant: tenants.1, client: s.client, subject: s.subject) == nil, "subject lookup crosses tenants")
    }

    /// Inserting the same id twice is a conflict and leaves the first.
    public static func duplicateInsertConflicts(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        var other = sample(tenant: tenants.0, id: s.id)
        other.refreshToken = "other"
        do {
            try store.insert(other)
            throw Contract.Violation(description: "duplicate insert accepted")
        } catch let e as BrokerError {
            try expect(e.code == "conflict", "duplicate insert failed with \(e.code), not conflict")
        }
        try expect(try store.session(tenant: tenants.0, id: s.id)?.refreshToken == s.refreshToken, "duplicate insert changed the row")
    }

    /// The latest session of a subject is the newest active one.
    public static func latestSessionPrefersNewestActive(_ store: any SessionStore, tenants: (String, String)) throws {
        let subject = "sub-" + UUID().uuidString
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var revoked = sample(tenant: tenants.0, subject: subject, createdAt: t0.addingTimeInterval(20))
        revoked.state = .revoked
        let older = sample(tenant: tenants.0, subject: subject, createdAt: t0)
        let newer = sample(tenant: tenants.0, subject: subject, createdAt: t0.addingTimeInterval(10))
        for s in [older, revoked, newer] { try store.insert(s) }
        try expect(try store.latestSession(tenant: tenants.0, client: "app", subject: subject)?.id == newer.id, "latest active session not chosen")
    }

    /// The lock re-reads the row, writes what the body returns, and a throwing body writes nothing.
    public static func refreshLockWritesAtomically(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        let seen: Int64 = try store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 5) { locked in
            var w = locked
            w.version += 1
            w.accessToken = "new-access"
            w.refreshToken = "new-refresh"
            return (w, locked.version)
        }
        try expect(seen == s.version, "the body did not see the stored row")
        let after = try store.session(tenant: tenants.0, id: s.id)
        try expect(after?.version == s.version + 1 && after?.refreshToken == "new-refresh" && after?.accessToken == "new-access",
                   "the write under the lock was not stored")
        struct Boom: Error {}
        do {
            let _: Int = try store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 5) { _ in throw Boom() }
        } catch is Boom {}
        try expect(try store.session(tenant: tenants.0, id: s.id)?.version == s.version + 1, "a failed body changed the row")
        _ = try store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 5) { _ in (nil as Session?, 0) }
        try expect(try store.session(tenant: tenants.0, id: s.id)?.version == s.version + 1, "a nil write changed the row")
        do {
            let _: Int = try store.withRefreshLock(tenant: tenants.1, id: s.id, timeout: 5) { _ in (nil, 0) }
            throw Contract.Violation(description: "the lock reached a session of another tenant")
        } catch let e as BrokerError {
            try expect(e.code == "not_found", "locking another tenant's session failed with \(e.code)")
        }
    }

    /// A second holder waits for the first, sees its write, and gives up after the timeout.
    public static func refreshLockIsExclusive(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        let release = DispatchSemaphore(value: 0)
        let done = holdLock(store, s, release: release, writing: "first")
        do {
            let _: Int = try store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 0.3) { _ in (nil, 0) }
            throw Contract.Violation(description: "two holders of one session's lock at once")
        } catch let e as BrokerError {
            try expect(e == .refreshBusy, "waiting for a held lock failed with \(e.code), not refresh_busy")
        }
        let waiterSaw = Mutex<String?>(nil)
        let waiter = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            // A failed wait reads as nil, which the check below refuses.
            let rt: String? = try? store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 5) { locked in (nil, locked.refreshToken) } ?? nil
            waiterSaw.withLock { $0 = rt }
            waiter.signal()
        }
        Thread.sleep(forTimeInterval: 0.1)
        release.signal()
        done.wait()
        waiter.wait()
        try expect(waiterSaw.withLock { $0 } == "first", "the second holder did not see the first holder's write")
    }

    /// Trying the lock (timeout 0) fails at once while another holder has it.
    public static func tryLockFailsFastWhenHeld(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        let release = DispatchSemaphore(value: 0)
        let done = holdLock(store, s, release: release)
        let started = Date()
        do {
            let _: Int = try store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 0) { _ in (nil, 0) }
            throw Contract.Violation(description: "a try-lock got a held lock")
        } catch let e as BrokerError {
            try expect(e == .refreshBusy, "a held try-lock failed with \(e.code)")
        }
        try expect(Date().timeIntervalSince(started) < 1, "a try-lock waited")
        release.signal()
        done.wait()
        let free: Int = try store.withRefreshLock(tenant: tenants.0, id: s.id, timeout: 0) { _ in (nil, 7) }
        try expect(free == 7, "a free try-lock was not taken")
    }

    /// A write over the row as last written applies while nobody wrote since, in its tenant only;
    /// once the row moved on, or when it would change the state, it writes nothing. A holder of
    /// the lock who writes meanwhile is waited for and wins.
    public static func writeIfUnchangedIsVersionChecked(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        var other = sample(tenant: tenants.1, id: s.id)
        other.refreshToken = "other-tenant"
        try store.insert(other)
        var w = s
        w.version += 1
        w.refreshToken = "optimistic"
        try expect(try store.writeIfUnchanged(w, over: s), "a write over the row as it is was refused")
        let after = try store.session(tenant: tenants.0, id: s.id)
        try expect(after?.version == s.version + 1 && after?.refreshToken == "optimistic", "the write was not stored")
        try expect(try store.session(tenant: tenants.1, id: s.id)?.refreshToken == "other-tenant", "the write reached another tenant's row")
        var stale = s
        stale.version += 1
        stale.refreshToken = "stale"
        try expect(try !store.writeIfUnchanged(stale, over: s), "a write over a superseded version was taken")
        try expect(try store.session(tenant: tenants.0, id: s.id)?.refreshToken == "optimistic", "a refused write changed the row")
        var ended = w
        ended.version += 1
        ended.state = .needsReauth
        try expect(try !store.writeIfUnchanged(ended, over: w), "a state change was written without the lock")
        try expect(try store.session(tenant: tenants.0, id: s.id)?.state == .active, "a refused state change was stored")
        // The lock's holder writes while the unlocked write waits: the holder wins.
        guard let current = try store.session(tenant: tenants.0, id: s.id) else { throw Contract.Violation(description: "row gone") }
        let release = DispatchSemaphore(value: 0)
        let done = holdLock(store, current, release: release, writing: "holder")
        let late = Mutex<Bool?>(nil)
        let tried = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var l = current
            l.version += 1
            l.refreshToken = "late"
            late.withLock { $0 = try? store.writeIfUnchanged(l, over: current) }   // an error reads as nil: not "refused", so the check fails
            tried.signal()
        }
        Thread.sleep(forTimeInterval: 0.1)
        release.signal()
        done.wait()
        tried.wait()
        try expect(late.withLock { $0 } == false, "an unlocked write went through while the lock's holder wrote")
        try expect(try store.session(tenant: tenants.0, id: s.id)?.refreshToken == "holder", "the lock's holder lost its write")
    }

    /// Writers that decided on the same row as read race their writes over it (a due refresh's
    /// start on several replicas): exactly one lands, in its tenant only; what it did not change
    /// stays as it was, and a use marked after the read survives it.
    public static func writesOverOneReadLandOnce(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        let other = sample(tenant: tenants.1, id: s.id)
        try store.insert(other)
        guard let read = try store.session(tenant: tenants.0, id: s.id) else { throw Contract.Violation(description: "row gone") }
        let used = s.createdAt.addingTimeInterval(900)
        try store.touch([SessionUse(tenant: tenants.0, id: s.id, at: used)])
        let landed = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            var w = read
            w.version += 1
            w.attempt = RefreshAttempt(id: "att-\(i)", startedAt: s.createdAt.addingTimeInterval(Double(i)))
            w.nextRefreshAt = s.createdAt.addingTimeInterval(4_000)
            w.lastUsedAt = s.createdAt.addingTimeInterval(100)   // older than the mark made since the read
            // A write that failed did not land: counted as one that lost the race.
            if (try? store.writeIfUnchanged(w, over: read)) == true { landed.withLock { $0.append("att-\(i)") } }
        }
        let ids = landed.withLock { $0 }
        try expect(ids.count == 1, "\(ids.count) writes over the same read landed")
        guard let after = try store.session(tenant: tenants.0, id: s.id) else { throw Contract.Violation(description: "row gone") }
        try expect(after.attempt?.id == ids.first && after.version == read.version + 1, "the landed write is not the row")
        try expect(after.accessToken == read.accessToken && after.refreshToken == read.refreshToken && after.idToken == read.idToken
                   && after.claims == read.claims && after.scopes == read.scopes && after.state == read.state,
                   "a column the write did not change moved")
        try expect(after.lastUsedAt.map { abs($0.timeIntervalSince(used)) < 0.001 } == true, "a use marked after the read was lost")
        let untouched = try store.session(tenant: tenants.1, id: s.id)
        try expect(untouched?.version == other.version && untouched?.attempt == nil, "the write reached another tenant's row")
    }

    /// The loader sees active sessions due before the horizon, earliest first, in every tenant.
    public static func dueSessionsAreActiveAndOrdered(_ store: any SessionStore, tenants: (String, String)) throws {
        let far = Date(timeIntervalSince1970: 1_900_000_000)   // later than any other contract sample
        var rows: [Session] = []
        for (i, t) in [tenants.0, tenants.1, tenants.0].enumerated() {
            var s = sample(tenant: t)
            s.nextRefreshAt = far.addingTimeInterval(Double(3 - i))
            rows.append(s)
        }
        rows[2].state = .revoked
        var later = sample(tenant: tenants.1)
        later.nextRefreshAt = far.addingTimeInterval(100)
        for s in rows + [later] { try store.insert(s) }
        let mine = Set((rows + [later]).map(\.id))
        let due = try store.dueSessions(before: far.addingTimeInterval(50), limit: 1_000_000).filter { mine.contains($0.id) }
        try expect(due.map(\.id) == [rows[1].id, rows[0].id], "due sessions wrong or out of order: \(due.map(\.id))")
        try expect(due.map(\.tenant) == [tenants.1, tenants.0], "due sessions lost their tenants")
    }

    /// touch records last use without bumping the version.
    public static func touchRecordsUse(_ store: any SessionStore, tenants: (String, String)) throws {
        let s = sample(tenant: tenants.0)
        try store.insert(s)
        let at = Date(timeIntervalSince1970: 1_800_000_500)
        try store.touch([SessionUse(tenant: tenants.0, id: s.id, at: at), SessionUse(tenant: tenants.1, id: s.id, at: at)])
        let after = try store.session(tenant: tenants.0, id: s.id)
        try expect(after.flatMap(\.lastUsedAt).map { abs($0.timeIntervalSince(at)) < 0.001 } == true, "last_used_at not recorded")
        try expect(after?.version == s.version, "touch bumped the version")
    }

    /// Every case, so that each backend runs them all as one parameterized test.
    public enum Case: String, CaseIterable, Sendable {
        case insertedSessionReadsBackOnlyInItsTenant, duplicateInsertConflicts, latestSessionPrefersNewestActive
        case refreshLockWritesAtomically, refreshLockIsExclusive, touchRecordsUse, tryLockFailsFastWhenHeld
        case dueSessionsAreActiveAndOrdered, writeIfUnchangedIsVersionChecked, writesOverOneReadLandOnce
        case endUserReadsBack, latestSessionOfEndUserPrefersNewestActive

        public func run(_ store: any SessionStore, tenants: (String, String)) throws {
            switch self {
            case .insertedSessionReadsBackOnlyInItsTenant: try SessionStoreContract.insertedSessionReadsBackOnlyInItsTenant(store, tenants: tenants)
            case .duplicateInsertConflicts: try SessionStoreContract.duplicateInsertConflicts(store, tenants: tenants)
            case .latestSessionPrefersNewestActive: try SessionStoreContract.latestSessionPrefersNewestActive(store, tenants: tenants)
            case .refreshLockWritesAtomically: try SessionStoreContract.refreshLockWritesAtomically(store, tenants: tenants)
            case .refreshLockIsExclusive: try SessionStoreContract.refreshLockIsExclusive(store, tenants: tenants)
            case .touchRecordsUse: try SessionStoreContract.touchRecordsUse(store, tenants: tenants)
            case .tryLockFailsFastWhenHeld: try SessionStoreContract.tryLockFailsFastWhenHeld(store, tenants: tenants)
            case .dueSessionsAreActiveAndOrdered: try SessionStoreContract.dueSessionsAreActiveAndOrdered(store, tenants: tenants)
            case .writeIfUnchangedIsVersionChecked: try SessionStoreContract.writeIfUnchangedIsVersionChecked(store, tenants: tenants)
            case .writesOverOneReadLandOnce: try SessionStoreContract.writesOverOneReadLandOnce(store, tenants: tenants)
            case .endUserReadsBack: try SessionStoreContract.endUserReadsBack(store, tenants: tenants)
            case .latestSessionOfEndUserPrefersNewestActive: try SessionStoreContract.latestSessionOfEndUserPrefersNewestActive(store, tenants: tenants)
            }
        }
    }
}
