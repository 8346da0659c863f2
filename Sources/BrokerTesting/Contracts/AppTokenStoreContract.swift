import BrokerCore
import Foundation

/// AppTokenStoreContract: app tokens come back whole (sealed values opened) in their own tenant
/// only; the grant lock re-reads, bumps the version and excludes other holders; a client's
/// tokens are dropped in its tenant only; renewal finds used tokens only (retention's purge of
/// expired rows is in RetentionStoreContract). The tenants must have clients `app` and `other`.
public enum AppTokenStoreContract: String, CaseIterable, Sendable {
    case comesBackWholeInItsTenantOnly, lockRereadsAndBumpsTheVersion, lockExcludesOtherHolders, dropIsPerTenantAndClient,
         renewalFindsUsedTokensOnly

    public func run(_ store: any AppTokenStore, tenants: (String, String)) throws {
        switch self {
        case .comesBackWholeInItsTenantOnly: try Self.comesBackWhole(store, tenants)
        case .lockRereadsAndBumpsTheVersion: try Self.lockRereads(store, tenants)
        case .lockExcludesOtherHolders: try Self.lockExcludes(store, tenants)
        case .dropIsPerTenantAndClient: try Self.dropIsScoped(store, tenants)
        case .renewalFindsUsedTokensOnly: try Self.renewalFindsUsed(store, tenants)
        }
    }

    static let now = Date()

    static func sample(_ tenant: String, client: String = "app", ask: AppTokenAsk, expiresIn: TimeInterval = 3600) -> AppToken {
        AppToken(tenant: tenant, client: client, ask: ask, accessToken: "at-" + UUID().uuidString, tokenType: .dpop, scopes: ask.scopes,
                 expiresAt: now.addingTimeInterval(expiresIn), lifetime: 3600, renewAt: now.addingTimeInterval(expiresIn - 300),
                 dpopKey: DPoPKeyMaterial(algorithm: .es256, der: [1, 2, 3, 4]), grantedAt: now,
                 createdAt: min(now, now.addingTimeInterval(expiresIn - 3600)))
    }

    static func write(_ store: any AppTokenStore, _ t: AppToken) throws {
        try store.withGrantLock(tenant: t.tenant, client: t.client, ask: t.ask, timeout: 5) { _ in (t, ()) }
    }

    static func uniqueAsk() -> AppTokenAsk { AppTokenAsk(scopes: [Contract.unique("read"), "write"], audience: "https://api.example", resource: nil) }

    static func comesBackWhole(_ store: any AppTokenStore, _ tenants: (String, String)) throws {
        let ask = uniqueAsk(), t = sample(tenants.0, ask: ask)
        try write(store, t)
        let back = try Contract.some(try store.appToken(tenant: tenants.0, client: "app", ask: ask), "the app token was not stored")
        try Contract.expect(back.accessToken == t.accessToken && back.tokenType == .dpop && back.dpopKey == t.dpopKey && back.scopes == t.scopes
                            && back.ask == ask && back.lifetime == 3600 && back.version == 1, "the app token did not come back whole")
        try Contract.expect(abs((back.expiresAt ?? .distantPast).timeIntervalSince(t.expiresAt!)) < 0.01, "expires_at changed")
        try Contract.expect(try store.appToken(tenant: tenants.1, client: "app", ask: ask) == nil, "another tenant saw the app token")
        try Contract.expect(try store.appToken(tenant: tenants.0, client: "other", ask: ask) == nil, "another client saw the app token")
        try Contract.expect(try store.appToken(tenant: tenants.0, client: "app", ask: AppTokenAsk(scopes: ask.scopes)) == nil,
                            "an ask without the audience found the audience's token")
    }

    static func lockRereads(_ store: any AppTokenStore, _ tenants: (String, String)) throws {
        let ask = uniqueAsk(), first = sample(tenants.0, ask: ask)
        try store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 5) { locked in
            try Contract.expect(locked == nil, "a row that was never written was read under the lock")
            return (first, ())
        }
        var second = first
        second.accessToken = "at-second"
        try store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 5) { locked in
            try Contract.expect(locked?.accessToken == first.accessToken && locked?.version == 1, "the lock did not re-read the last write")
            return (second, ())
        }
        try store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 5) { _ in (nil as AppToken?, ()) }
        let back = try store.appToken(tenant: tenants.0, client: "app", ask: ask)
        try Contract.expect(back?.accessToken == "at-second" && back?.version == 2, "a write under the lock did not bump the version once")
        // A failed body writes nothing.
        struct Failed: Error {}
        _ = try? store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 5) { _ -> (write: AppToken?, result: Void) in throw Failed() }
        try Contract.expect(try store.appToken(tenant: tenants.0, client: "app", ask: ask)?.version == 2, "a failed body wrote")
    }

    static func lockExcludes(_ store: any AppTokenStore, _ tenants: (String, String)) throws {
        let ask = uniqueAsk(), t = sample(tenants.0, ask: ask)
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread {
            _ = try? store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 5) { _ in
                held.signal()
                release.wait()
                return (t, ())
            }
            done.signal()
        }.start()
        held.wait()
        var busy = false
        do { try store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 0) { _ in (nil as AppToken?, ()) } } catch BrokerError.refreshBusy {
            busy = true
        }
        try Contract.expect(busy, "a second holder took a held grant lock")
        // Another tenant's lock of the same client and ask is another lock.
        try store.withGrantLock(tenant: tenants.1, client: "app", ask: ask, timeout: 0) { _ in (nil as AppToken?, ()) }
        release.signal()
        let seen = try store.withGrantLock(tenant: tenants.0, client: "app", ask: ask, timeout: 5) { locked in (nil as AppToken?, locked?.accessToken) }
        done.wait()
        try Contract.expect(seen == t.accessToken, "a waiting holder did not see the previous holder's write")
    }

    static func dropIsScoped(_ store: any AppTokenStore, _ tenants: (String, String)) throws {
        let ask = uniqueAsk()
        let a = sample(tenants.0, ask: ask), other = sample(tenants.0, client: "other", ask: ask), b = sample(tenants.1, ask: ask)
        for t in [a, other, b] { try write(store, t) }
        try Contract.expect(try store.drop(tenant: tenants.0, client: "app") >= 1, "nothing was dropped")
        let gone = try store.appToken(tenant: tenants.0, client: "app", ask: ask)
        try Contract.expect(gone != nil && gone?.accessToken == nil && gone?.dpopKey == a.dpopKey && gone!.version > a.version,
                            "a dropped token is still there, or lost its DPoP key, or kept its version")
        try Contract.expect(try store.appToken(tenant: tenants.0, client: "other", ask: ask)?.accessToken == other.accessToken, "another client's token was dropped")
        try Contract.expect(try store.appToken(tenant: tenants.1, client: "app", ask: ask)?.accessToken == b.accessToken, "another tenant's token was dropped")
    }

    static func renewalFindsUsed(_ store: any AppTokenStore, _ tenants: (String, String)) throws {
        let used = sample(tenants.0, ask: uniqueAsk(), expiresIn: 100), unused = sample(tenants.1, ask: uniqueAsk(), expiresIn: 100)
        let later = sample(tenants.0, ask: uniqueAsk(), expiresIn: 3600)
        for t in [used, unused, later] { try write(store, t) }
        try store.touch([AppTokenUse(tenant: tenants.0, client: "app", ask: used.ask, at: now.addingTimeInterval(1)),
                         AppTokenUse(tenant: tenants.0, client: "app", ask: later.ask, at: now.addingTimeInterval(1))])
        let due = try store.dueForRenewal(before: now.addingTimeInterval(10), limit: 10_000)
        try Contract.expect(due.contains { $0.tenant == tenants.0 && $0.ask == used.ask }, "a used token past its renewal instant is not due")
        try Contract.expect(!due.contains { $0.ask == unused.ask }, "an unused token is due for renewal")
        try Contract.expect(!due.contains { $0.ask == later.ask }, "a token before its renewal instant is due")
        try Contract.expect(try store.dueForRenewal(before: now.addingTimeInterval(200), limit: 10_000).allSatisfy { $0.ask != used.ask },
                            "an expired token is due for renewal")
    }

}
