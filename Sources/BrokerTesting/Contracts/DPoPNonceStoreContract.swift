import BrokerCore
import Foundation

/// DPoPNonceStoreContract: a client's nonce is read back in its own tenant only, with its origin;
/// learning the nonce already held changes nothing, a new one replaces it. The tenants must have
/// clients `app` and `other`.
public enum DPoPNonceStoreContract: String, CaseIterable, Sendable {
    case readBackInItsTenantOnly, onlyANewNonceIsWritten

    public func run(_ store: any DPoPNonceStore, tenants: (String, String)) throws {
        switch self {
        case .readBackInItsTenantOnly: try Self.readBack(store, tenants)
        case .onlyANewNonceIsWritten: try Self.onlyNew(store, tenants)
        }
    }

    static func sample(_ tenant: String, client: String = "app", _ value: String, from: IdPEndpoint = .token, at: Date = Contract.t0) -> ServerNonce {
        ServerNonce(tenant: tenant, client: client, issuer: "https://idp.example", value: value, learnedFrom: from, learnedAt: at)
    }

    static func readBack(_ store: any DPoPNonceStore, _ tenants: (String, String)) throws {
        let n = sample(tenants.0, Contract.unique("nonce"), from: .pushedAuthorizationRequest)
        try Contract.expect(try store.learn(n), "a first nonce was not written")
        try Contract.expect(try store.nonce(tenant: tenants.0, client: "app") == n, "the nonce did not read back whole")
        try Contract.expect(try store.nonce(tenant: tenants.1, client: "app") == nil, "a nonce is visible from another tenant")
        try Contract.expect(try store.nonce(tenant: tenants.0, client: "other") == nil, "a nonce is visible for another client")
        let theirs = sample(tenants.1, Contract.unique("nonce"))
        try store.learn(theirs)
        try Contract.expect(try store.nonce(tenant: tenants.0, client: "app") == n, "another tenant's nonce replaced this one")
    }

    static func onlyNew(_ store: any DPoPNonceStore, _ tenants: (String, String)) throws {
        let first = sample(tenants.0, client: "other", Contract.unique("nonce"))
        try store.learn(first)
        let same = sample(tenants.0, client: "other", first.value, from: .revocation, at: Contract.t0.addingTimeInterval(60))
        try Contract.expect(try !store.learn(same), "the nonce already held was written again")
        try Contract.expect(try store.nonce(tenant: tenants.0, client: "other") == first, "learning the same nonce changed the row")
        let next = sample(tenants.0, client: "other", Contract.unique("nonce"), from: .revocation, at: Contract.t0.addingTimeInterval(120))
        try Contract.expect(try store.learn(next), "a new nonce was not written")
        try Contract.expect(try store.nonce(tenant: tenants.0, client: "other") == next, "a new nonce did not replace the old one")
    }
}
