import BrokerCore
import Foundation

/// RevocationStoreContract: a session is revoked only within its tenant, its tokens queued for
/// the IdP once; outbox entries are claimed with a lease and settled only within their tenant.
public enum RevocationStoreContract: String, CaseIterable, Sendable {
    case revokedOnceWithinItsTenant, outboxSettledWithinItsTenant, revokedInBulkWithinItsTenant

    public func run(_ store: any RevocationStore & SessionStore, tenants: (String, String)) throws {
        switch self {
        case .revokedOnceWithinItsTenant: try Self.revokedOnceWithinItsTenant(store, tenants: tenants)
        case .outboxSettledWithinItsTenant: try Self.outboxSettledWithinItsTenant(store, tenants: tenants)
        case .revokedInBulkWithinItsTenant: try Self.revokedInBulkWithinItsTenant(store, tenants: tenants)
        }
    }

    static func revokedOnceWithinItsTenant(_ store: any RevocationStore & SessionStore, tenants: (String, String)) throws {
        let s = SessionStoreContract.sample(tenant: tenants.0)
        try store.insert(s)
        do {
            _ = try store.revoke(tenant: tenants.1, id: s.id, timeout: 1, now: Contract.t0)
            throw Contract.Violation(description: "a session was revoked from another tenant")
        } catch let e as BrokerError {
            try Contract.expect(e.code == "not_found", "revoking another tenant's session failed with \(e.code)")
        }
        // The access token lives an hour after t0: both tokens go to the IdP.
        let r = try store.revoke(tenant: tenants.0, id: s.id, timeout: 1, now: Contract.t0)
        try Contract.expect(r.before.refreshToken == s.refreshToken && r.after.state == .revoked, "the revocation did not report before and after")
        try Contract.expect(r.after.accessToken == nil && r.after.refreshToken == nil, "a revoked session kept token material")
        try Contract.expect(Set(r.queued.map(\.hint)) == ["refresh_token", "access_token"] && r.queued.allSatisfy { $0.tenant == tenants.0 },
                            "the session's tokens were not queued for the IdP within its tenant")
        try Contract.expect(try store.session(tenant: tenants.0, id: s.id)?.state == .revoked, "the revocation was not stored")
        try Contract.expect(try store.pendingRevocations(tenant: tenants.0, session: s.id) == 2
                            && store.pendingRevocations(tenant: tenants.1, session: s.id) == 0, "the outbox count crosses tenants")
        let again = try store.revoke(tenant: tenants.0, id: s.id, timeout: 1, now: Contract.t0)
        try Contract.expect(again.queued.isEmpty && again.before.state == .revoked, "revoking twice queued the tokens twice")
    }

    static func outboxSettledWithinItsTenant(_ store: any RevocationStore & SessionStore, tenants: (String, String)) throws {
        let s = SessionStoreContract.sample(tenant: tenants.0)
        try store.insert(s)
        let now = Date()
        let queued = try store.revoke(tenant: tenants.0, id: s.id, timeout: 1, now: now).queued
        let mine = Set(queued.map(\.id))
        try Contract.expect(try store.claimDueRevocations(now: now, lease: 60, limit: 100_000).filter { mine.contains($0.id) }.isEmpty,
                            "an entry the revoking caller delivers at once was claimed by the outbox meanwhile")
        let later = now.addingTimeInterval(31)
        let claimed = try store.claimDueRevocations(now: later, lease: 60, limit: 100_000).filter { mine.contains($0.id) }
        try Contract.expect(Set(claimed.map(\.id)) == mine && claimed.allSatisfy { $0.tenant == tenants.0 },
                            "entries the caller did not settle were not claimed whole after its lease")
        try Contract.expect(try store.claimDueRevocations(now: later, lease: 60, limit: 100_000).filter { mine.contains($0.id) }.isEmpty,
                            "a leased entry was claimed again")
        let first = claimed[0], second = claimed[1]
        try store.revocationsDelivered(tenant: tenants.1, ids: [first.id])
        try Contract.expect(try store.pendingRevocations(tenant: tenants.0, session: s.id) == 2, "another tenant settled an entry")
        try store.revocationsDelivered(tenant: tenants.0, ids: [first.id])
        try Contract.expect(try store.pendingRevocations(tenant: tenants.0, session: s.id) == 1, "a delivered entry stayed")
        try store.revocationFailed(tenant: tenants.1, id: second.id, next: now, reason: "x")
        try store.revocationFailed(tenant: tenants.0, id: second.id, next: now.addingTimeInterval(30), reason: "idp_unavailable")
        let retried = try store.claimDueRevocations(now: now.addingTimeInterval(31), lease: 60, limit: 100_000).filter { mine.contains($0.id) }
        try Contract.expect(retried.map(\.id) == [second.id] && retried[0].token == second.token, "a failed entry did not come back at its time")
    }

    static func revokedInBulkWithinItsTenant(_ store: any RevocationStore & SessionStore, tenants: (String, String)) throws {
        let a = SessionStoreContract.sample(tenant: tenants.0), gone = SessionStoreContract.sample(tenant: tenants.0)
        let busy = SessionStoreContract.sample(tenant: tenants.0), other = SessionStoreContract.sample(tenant: tenants.1)
        for s in [a, gone, busy, other] { try store.insert(s) }
        _ = try store.revoke(tenant: tenants.0, id: gone.id, timeout: 1, now: Contract.t0)
        let release = DispatchSemaphore(value: 0)
        let held = SessionStoreContract.holdLock(store, busy, release: release)
        defer {
            release.signal()
            held.wait()
        }
        let r = try store.revokeMany(tenant: tenants.0, ids: [a.id, gone.id, busy.id, other.id, "ses_missing"], now: Contract.t0)
        try Contract.expect(Set(r.left) == [busy.id, other.id, "ses_missing"], "left alone: \(r.left) (a busy lock, another tenant's id, no session)")
        let mine = r.revoked.first { $0.before.id == a.id }, again = r.revoked.first { $0.before.id == gone.id }
        try Contract.expect(mine?.after == a.ended(.revoked, reason: nil, lastError: nil, keepIDToken: false) && mine?.queued.count == 2,
                            "a free session was not revoked as one by one, both tokens queued")
        try Contract.expect(again?.queued.isEmpty == true && again?.after.state == .revoked, "an already revoked session queued again")
        let stored = try store.session(tenant: tenants.0, id: a.id)
        try Contract.expect(stored.map { SessionStoreContract.same($0, a.ended(.revoked, reason: nil, lastError: nil, keepIDToken: false)) } == true,
                            "the bulk write differs from the one-by-one revocation")
        try Contract.expect(try store.pendingRevocations(tenant: tenants.0, session: a.id) == 2, "the bulk revocation's outbox entries are missing")
        try Contract.expect(try store.session(tenant: tenants.1, id: other.id)?.state == .active, "another tenant's session was revoked")
        try Contract.expect(try store.session(tenant: tenants.0, id: busy.id)?.state == .active, "a session whose lock was held was revoked")
    }
}
