import BrokerCore
import Foundation

/// SealedValueStoreContract: values are counted by the key that sealed them; a walk re-seals
/// every value it can open under the current key — every tenant's, each still opening in its own
/// row only — and leaves alone the values it cannot open. Stores that seal nothing have no
/// such port, so this contract runs against PostgreSQL only. The fleet's kept count is what the
/// last count found, answered as it is while fresh and counted again once stale.
public enum SealedValueStoreContract {
    /// The stores of one replica, built over one sealer.
    public struct Replica {
        public var sealed: any SealedValueStore
        public var sessions: any SessionStore
        public var registry: any RegistryStore
        public init(sealed: any SealedValueStore, sessions: any SessionStore, registry: any RegistryStore) {
            self.sealed = sealed
            self.sessions = sessions
            self.registry = registry
        }
    }

    /// `old` seals under `oldID`; `rotated` seals under `newID` and opens both; `newOnly` holds
    /// `newID` alone; `stranger` seals under `strangerID`, a key none of the others hold.
    public static func run(old: Replica, rotated: Replica, newOnly: Replica, stranger: Replica,
                           ids: (old: String, new: String, stranger: String), tenants: (String, String)) throws {
        var written: [Session] = [], clients: [(String, String, String)] = []
        for t in [tenants.0, tenants.1] {
            for _ in 0..<3 {
                let s = SessionStoreContract.sample(tenant: t)
                try old.sessions.insert(s)
                written.append(s)
            }
            let id = Contract.unique("sealed")
            let secret = "secret-" + UUID().uuidString
            _ = try old.registry.putClient(ClientRegistration(tenant: t, id: id, issuer: "https://idp.example", clientID: id, authMethod: .clientSecretBasic,
                                                              redirectURI: "https://b/cb", scopes: ["openid"]),
                                           secret: secret, assertionKey: nil, now: Contract.t0)
            clients.append((t, id, secret))
        }
        try stranger.sessions.insert(SessionStoreContract.sample(tenant: tenants.0))
        let mine = written.count * 3 + clients.count   // three tokens a session, one secret a client
        let before = try rotated.sealed.countByKey()
        try Contract.expect(before[ids.old] == mine && before[ids.new] == nil, "values are not counted by their key: \(before)")
        try Contract.expect((before[ids.stranger] ?? 0) >= 3, "a stranger's values are not counted")

        var cursor: ResealBatch.Cursor?, resealed = 0, unopenable = 0, batches = 0
        repeat {
            let b = try rotated.sealed.reseal(after: cursor, limit: 2)
            try Contract.expect(b.resealed + b.unopenable <= 2, "a batch went past its limit")
            resealed += b.resealed
            unopenable += b.unopenable
            cursor = b.next
            batches += 1
        } while cursor != nil && batches < 100_000
        try Contract.expect(resealed >= mine, "the walk re-sealed \(resealed) of \(mine) values")
        try Contract.expect(unopenable >= 3, "values that do not open were not counted")
        let after = try rotated.sealed.countByKey()
        try Contract.expect(after[ids.old] == nil && after[ids.new] == mine, "after the walk: \(after)")
        try Contract.expect(after[ids.stranger] == before[ids.stranger], "a value that does not open was changed")
        let again = try rotated.sealed.reseal(after: nil, limit: 1_000_000)
        try Contract.expect(again.resealed == 0, "a second walk re-sealed again")

        // The old key can go: the new one alone opens every value, each in its own tenant's row.
        for s in written {
            guard let read = try newOnly.sessions.session(tenant: s.tenant, id: s.id) else { throw Contract.Violation(description: "a session went missing") }
            try Contract.expect(read.accessToken == s.accessToken && read.refreshToken == s.refreshToken && read.idToken == s.idToken,
                                "a re-sealed token differs")
            let other = s.tenant == tenants.0 ? tenants.1 : tenants.0
            try Contract.expect(try newOnly.sessions.session(tenant: other, id: s.id) == nil, "a session is found in another tenant")
        }
        for (t, id, secret) in clients {
            try Contract.expect(try newOnly.registry.clientSecret(tenant: t, id: id) == secret, "a re-sealed client secret differs")
        }
        try sharedCount(old: old, rotated: rotated, ids: ids, tenant: tenants.1)
    }

    /// A recount is kept; while fresh it is answered as it is, however the values changed since;
    /// once stale, the next ask counts again and keeps that.
    static func sharedCount(old: Replica, rotated: Replica, ids: (old: String, new: String, stranger: String), tenant: String) throws {
        let t = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let kept = try rotated.sealed.recount(now: t)
        try Contract.expect(kept.values == (try rotated.sealed.countByKey()) && kept.countedAt == t, "a recount was not kept: \(kept)")
        try Contract.expect(kept.values[ids.old] == nil, "the kept count is not today's")
        try old.sessions.insert(SessionStoreContract.sample(tenant: tenant))   // three values under the old key
        let fresh = try rotated.sealed.sharedCount(maxAge: 600, now: t.addingTimeInterval(599))
        try Contract.expect(fresh == kept, "a fresh kept count was counted again: \(fresh)")
        let stale = try rotated.sealed.sharedCount(maxAge: 600, now: t.addingTimeInterval(601))
        try Contract.expect(stale.values[ids.old] == 3 && stale.countedAt == t.addingTimeInterval(601), "a stale count was not counted again: \(stale)")
        try Contract.expect(try rotated.sealed.sharedCount(maxAge: 600, now: t.addingTimeInterval(602)) == stale, "the new count was not kept")
    }
}
