import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

/// The timer's lead and a request's default min_ttl are one rule (RefreshPolicy.defaultMinTTL).
@Suite("One rule for fresh enough")
struct FreshEnoughTests {
    @Test("60-s tokens: a default request every second over three lifetimes never waits for an on-demand refresh; the timer makes them all")
    func timerServesDefaultRequests() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint(answer: ScriptedTokenEndpoint.rotating(lifetime: 60)))
        var s = SessionStoreContract.sample(tenant: "t1", createdAt: h.clock.now())
        s.accessExpiresAt = h.clock.now() + 60
        s.accessLifetime = 60
        s.lastUsedAt = h.clock.now()
        s.nextRefreshAt = RefreshPolicy().nextRefresh(issuedAt: h.clock.now(), expiresAt: h.clock.now() + 60, jitter: 0)
        try h.store.insert(s)
        let key = SessionKey(tenant: "t1", id: s.id)
        var least = TimeInterval.infinity
        for _ in 0..<180 {
            h.clock.advance(by: 1)
            if let due = try h.store.session(tenant: "t1", id: s.id)?.nextRefreshAt, due <= h.clock.now() {
                _ = h.refresher.refreshDue(key, client: "app")
            }
            let t = try await h.token(.session(s.id), TokenRequest()).get()
            least = min(least, t.expiresAt.timeIntervalSince(h.clock.now()))
        }
        #expect(h.service.metrics.tokenRequests.counts["refreshed", default: 0] == 0, "a default request waited for a refresh")
        #expect(h.endpoint.spentTokens.count == 3, "the timer refreshes once a lifetime")
        #expect(least >= 6)
    }
}
