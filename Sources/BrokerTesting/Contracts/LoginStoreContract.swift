import BrokerCore
import Foundation

/// LoginStoreContract: a pending login is consumed once, by its state hash, and comes back with
/// its own tenant; expired ones are purged.
public enum LoginStoreContract: String, CaseIterable, Sendable {
    case consumedOnceWithItsTenant, purgeRemovesExpiredOnly, endUserComesBackWithTheLogin

    public func run(_ store: any LoginStore, tenants: (String, String)) throws {
        switch self {
        case .consumedOnceWithItsTenant: try Self.consumedOnceWithItsTenant(store, tenants: tenants)
        case .purgeRemovesExpiredOnly: try Self.purgeRemovesExpiredOnly(store, tenants: tenants)
        case .endUserComesBackWithTheLogin: try Self.endUserComesBackWithTheLogin(store, tenants: tenants)
        }
    }

    static func login(_ tenant: String, expiresAt: Date = Contract.t0.addingTimeInterval(600)) -> PendingLogin {
        PendingLogin(id: Contract.unique("login"), tenant: tenant, client: "app", issuer: "https://idp.example",
                     stateHash: (0..<32).map { _ in UInt8.random(in: 0...255) }, verifier: "verifier-" + UUID().uuidString,
                     nonce: "nonce-" + UUID().uuidString, scopes: ["openid"], redirectAfter: nil, createdAt: Contract.t0, expiresAt: expiresAt)
    }

    static func consumedOnceWithItsTenant(_ store: any LoginStore, tenants: (String, String)) throws {
        let a = login(tenants.0), b = login(tenants.1)
        try store.insert(a)
        try store.insert(b)
        let got = try store.consume(stateHash: a.stateHash)
        try Contract.expect(got?.tenant == tenants.0 && got?.id == a.id && got?.verifier == a.verifier && got?.nonce == a.nonce,
                            "the login did not come back whole with its tenant")
        try Contract.expect(try store.consume(stateHash: a.stateHash) == nil, "a login was consumed twice")
        try Contract.expect(try store.consume(stateHash: b.stateHash)?.tenant == tenants.1, "the other tenant's login was lost")
    }

    /// The application's user named at the start is the login's when it is consumed; a login
    /// that named none has none.
    static func endUserComesBackWithTheLogin(_ store: any LoginStore, tenants: (String, String)) throws {
        let plain = login(tenants.0), base = login(tenants.1)
        let named = PendingLogin(id: base.id, tenant: base.tenant, client: base.client, issuer: base.issuer, stateHash: base.stateHash,
                                 verifier: base.verifier, nonce: base.nonce, scopes: base.scopes, redirectAfter: nil, createdAt: base.createdAt,
                                 expiresAt: base.expiresAt, endUser: "user 42 — Zoë")
        try store.insert(plain)
        try store.insert(named)
        try Contract.expect(try store.consume(stateHash: named.stateHash)?.endUser == "user 42 — Zoë", "the login's end user was not kept")
        let back = try store.consume(stateHash: plain.stateHash)
        try Contract.expect(back != nil && back?.endUser == nil, "a login without an end user came back with one")
    }

    static func purgeRemovesExpiredOnly(_ store: any LoginStore, tenants: (String, String)) throws {
        let old = login(tenants.0, expiresAt: Contract.t0.addingTimeInterval(-10)), live = login(tenants.1)
        try store.insert(old)
        try store.insert(live)
        try Contract.expect(try store.purge(expiredBefore: Contract.t0) >= 1, "an expired login was not purged")
        try Contract.expect(try store.consume(stateHash: old.stateHash) == nil, "an expired login survived the purge")
        try Contract.expect(try store.consume(stateHash: live.stateHash) != nil, "the purge removed a live login")
    }
}
