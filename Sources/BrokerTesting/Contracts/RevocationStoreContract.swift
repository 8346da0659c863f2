import BrokerCore
import Foundation

/// RevocationStoreContract: a session is revoked only within its tenant, its tokens queued for
/// the IdP once; outbox entries are claimed with a lease and settled only within their tenant.
public enum RevocationStoreContract: String, CaseIterable, Sendable {
    case revokedOnceWithinItsTenant, outboxSettledWithinItsTenant

    public func run(_ store: any RevocationStore & SessionStore, tenants: (String, String)) throws {
        switch self {
        case .revokedOnceWithinItsTenant: try Self.revokedOnceWithinItsTenant(store, tenants: tenants)
        case .outboxSettledWithinItsTenant: try Self.outboxSettledWithinItsTenant(store, tenants: tenants)
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
        let claimed = try store.claimDueRevocations(now: now, lease: 60, limit: 100_000).filter { mine.contains($0.id) }
        try Contract.expect(Set(claimed.map(\.id)) == mine && claimed.allSatisfy { $0.attempts == 1 && $0.tenant == tenants.0 },
                            "due entries were not claimed whole, with the attempt counted")
        try Contract.expect(try store.claimDueRevocations(now: now, lease: 60, limit: 100_000).filter { mine.contains($0.id) }.isEmpty,
                            "a leased entry was claimed again")
        let first = claimed[0], second = claimed[1]
        try store.revocationDelivered(tenant: tenants.1, id: first.id)
        try Contract.expect(try store.pendingRevocations(tenant: tenants.0, session: s.id) == 2, "another tenant settled an entry")
        try store.revocationDelivered(tenant: tenants.0, id: first.id)
        try Contract.expect(try store.pendingRevocations(tenant: tenants.0, session: s.id) == 1, "a delivered entry stayed")
        try store.revocationFailed(tenant: tenants.1, id: second.id, next: now, reason: "x")
        try store.revocationFailed(tenant: tenants.0, id: second.id, next: now.addingTimeInterval(30), reason: "idp_unavailable")
        let later = try store.claimDueRevocations(now: now.addingTimeInterval(31), lease: 60, limit: 100_000).filter { mine.contains($0.id) }
        try Contract.expect(later.map(\.id) == [second.id] && later[0].token == second.token, "a failed entry did not come back at its time")
    }
}
