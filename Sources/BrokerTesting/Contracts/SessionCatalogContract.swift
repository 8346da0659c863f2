import BrokerCore
import Foundation

/// SessionCatalogContract: a tenant's listing shows its own sessions only, newest first, page by
/// page, with no token material.
public enum SessionCatalogContract {
    public static func run(_ catalog: any SessionCatalog, sessions: any SessionStore, tenants: (String, String)) throws {
        let subject = Contract.unique("listed")
        let mine = try (0..<3).map { i in
            let s = SessionStoreContract.sample(tenant: tenants.0, subject: subject, createdAt: Contract.t0.addingTimeInterval(Double(i)))
            try sessions.insert(s)
            return s.id
        }
        try sessions.insert(SessionStoreContract.sample(tenant: tenants.1, subject: subject))
        let first = try catalog.sessions(tenant: tenants.0, matching: SessionQuery(subject: subject, limit: 2))
        try Contract.expect(first.sessions.map(\.id) == [mine[2], mine[1]] && first.next != nil, "the first page is not the two newest")
        try Contract.expect(first.sessions.allSatisfy { $0.accessToken == nil && $0.refreshToken == nil && $0.idToken == nil },
                            "a listing carries token material")
        let second = try catalog.sessions(tenant: tenants.0, matching: SessionQuery(subject: subject, limit: 2, after: first.next))
        try Contract.expect(second.sessions.map(\.id) == [mine[0]] && second.next == nil, "the second page is not the oldest, last")
        let other = try catalog.sessions(tenant: tenants.1, matching: SessionQuery(subject: subject))
        try Contract.expect(other.sessions.count == 1 && other.sessions.allSatisfy { $0.tenant == tenants.1 }, "a listing crosses tenants")
        try endUserFilterSelectsThatUserOnly(catalog, sessions: sessions, tenants: tenants)
    }

    /// Filtered by end user: that user's sessions of the tenant, with their end user, at any
    /// client unless one is named — not a subject of the same name, not another tenant's user.
    static func endUserFilterSelectsThatUserOnly(_ catalog: any SessionCatalog, sessions: any SessionStore, tenants: (String, String)) throws {
        let user = Contract.unique("listed-eu")
        let mine = [SessionStoreContract.sample(tenant: tenants.0, createdAt: Contract.t0, endUser: user),
                    SessionStoreContract.sample(tenant: tenants.0, client: "other", createdAt: Contract.t0.addingTimeInterval(1), endUser: user)]
        let theirs = SessionStoreContract.sample(tenant: tenants.1, endUser: user)
        let namesake = SessionStoreContract.sample(tenant: tenants.0, subject: user)
        for s in mine + [theirs, namesake] { try sessions.insert(s) }
        let all = try catalog.sessions(tenant: tenants.0, matching: SessionQuery(endUser: user))
        try Contract.expect(all.sessions.map(\.id) == [mine[1].id, mine[0].id] && all.sessions.allSatisfy { $0.endUser == user },
                            "the end user's listing is not exactly that user's sessions, newest first")
        let atApp = try catalog.sessions(tenant: tenants.0, matching: SessionQuery(client: "app", endUser: user))
        try Contract.expect(atApp.sessions.map(\.id) == [mine[0].id], "the end user's listing at one client shows other clients' sessions")
        let other = try catalog.sessions(tenant: tenants.1, matching: SessionQuery(endUser: user))
        try Contract.expect(other.sessions.map(\.id) == [theirs.id], "the end user's listing crosses tenants")
    }
}
