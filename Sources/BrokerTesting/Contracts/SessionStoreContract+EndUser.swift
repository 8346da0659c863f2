import BrokerCore
import Foundation

/// The application's own id of its user (`end_user`): kept as given, and a lookup key of its
/// own — never the subject, never another tenant's or another client's.
extension SessionStoreContract {
    /// A session's end user reads back as written, by id and in bulk; none reads back as none.
    public static func endUserReadsBack(_ store: any SessionStore, tenants: (String, String)) throws {
        let named = sample(tenant: tenants.0, endUser: "app-user 7 — Zoë"), plain = sample(tenant: tenants.0)
        try store.insert(named)
        try store.insert(plain)
        try expect(try store.session(tenant: tenants.0, id: named.id)?.endUser == "app-user 7 — Zoë", "the end user did not read back")
        try expect(try store.sessions(tenant: tenants.0, ids: [named.id]).first?.endUser == "app-user 7 — Zoë", "the bulk read lost the end user")
        let back = try store.session(tenant: tenants.0, id: plain.id)
        try expect(back != nil && back?.endUser == nil, "a session without an end user read back with one")
    }

    /// By end user as by subject: the newest active session of that user at that client, else
    /// the newest whatever its state; the same id in another tenant, at another client, or as
    /// a subject is another user.
    public static func latestSessionOfEndUserPrefersNewestActive(_ store: any SessionStore, tenants: (String, String)) throws {
        let user = Contract.unique("eu")
        let t0 = Contract.t0
        let older = sample(tenant: tenants.0, subject: "s1", createdAt: t0, endUser: user)
        let newer = sample(tenant: tenants.0, subject: "s2", createdAt: t0.addingTimeInterval(10), endUser: user)
        var revoked = sample(tenant: tenants.0, subject: "s3", createdAt: t0.addingTimeInterval(20), endUser: user)
        revoked.state = .revoked
        let otherClient = sample(tenant: tenants.0, client: "other", createdAt: t0.addingTimeInterval(30), endUser: user)
        let otherTenant = sample(tenant: tenants.1, createdAt: t0.addingTimeInterval(40), endUser: user)
        let asSubject = sample(tenant: tenants.0, subject: user, createdAt: t0.addingTimeInterval(50))
        for s in [older, newer, revoked, otherClient, otherTenant, asSubject] { try store.insert(s) }
        try expect(try store.latestSession(tenant: tenants.0, client: "app", endUser: user)?.id == newer.id, "the newest active session of the end user was not chosen")
        try expect(try store.latestSession(tenant: tenants.1, client: "app", endUser: user)?.id == otherTenant.id, "the end user's lookup crossed tenants")
        try expect(try store.latestSession(tenant: tenants.0, client: "other", endUser: user)?.id == otherClient.id, "the end user's lookup crossed clients")
        try expect(try store.latestSession(tenant: tenants.0, client: "app", endUser: "nobody-" + user) == nil, "an unknown end user found a session")

        // Only ended sessions left: the newest of them, as by subject.
        let gone = Contract.unique("eu")
        var first = sample(tenant: tenants.0, createdAt: t0, endUser: gone), second = sample(tenant: tenants.0, createdAt: t0.addingTimeInterval(5), endUser: gone)
        first.state = .needsReauth
        second.state = .revoked
        for s in [first, second] { try store.insert(s) }
        try expect(try store.latestSession(tenant: tenants.0, client: "app", endUser: gone)?.id == second.id, "without an active session, the newest was not chosen")
        try expect(try store.latestSession(tenant: tenants.1, client: "app", endUser: gone) == nil, "ended sessions were found from another tenant")
    }
}
