import BrokerCore
import Foundation
import Testing

@Suite("Refresh policy")
struct RefreshPolicyTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("default lead is 20% of the lifetime")
    func defaultLeadIsTwentyPercent() {
        let next = RefreshPolicy().nextRefresh(issuedAt: t0, expiresAt: t0 + 1000, jitter: 0)
        #expect(next == t0 + 800)
    }

    @Test("the lead is capped at five minutes")
    func leadCappedAtFiveMinutes() {
        let next = RefreshPolicy().nextRefresh(issuedAt: t0, expiresAt: t0 + 3600, jitter: 0)
        #expect(next == t0 + 3300)
    }

    @Test("never before half the lifetime, so short tokens cannot loop")
    func neverBeforeHalfLifetime() {
        let policy = RefreshPolicy(leadSeconds: 60, jitterSeconds: 30)
        for jitter in [-1.0, 0, 1] {
            let next = policy.nextRefresh(issuedAt: t0, expiresAt: t0 + 2, jitter: jitter)
            #expect(next >= t0 + 1 && next <= t0 + 2)
        }
    }

    @Test("jitter spreads within ± jitter_seconds and never past expiry")
    func jitterWithinBounds() {
        let policy = RefreshPolicy(jitterSeconds: 30)
        #expect(policy.nextRefresh(issuedAt: t0, expiresAt: t0 + 3600, jitter: -1) == t0 + 3270)
        #expect(policy.nextRefresh(issuedAt: t0, expiresAt: t0 + 3600, jitter: 1) == t0 + 3330)
        let wide = RefreshPolicy(leadSeconds: 0, jitterSeconds: 100)
        #expect(wide.nextRefresh(issuedAt: t0, expiresAt: t0 + 3600, jitter: 1) == t0 + 3600)
    }

    @Test("invalid policies are named")
    func invalidPoliciesAreNamed() {
        #expect(RefreshPolicy(leadFraction: 0.9).problem != nil)
        #expect(RefreshPolicy(jitterSeconds: -1).problem != nil)
        #expect(RefreshPolicy().problem == nil)
    }

    @Test("a request naming no min_ttl needs at most half the life the timer refreshes at: 60-s tokens 6 s, an hour's 60 s")
    func defaultMinTTLFollowsTheLead() {
        let p = RefreshPolicy()
        #expect(p.defaultMinTTL(lifetime: 60) == 6)
        #expect(p.defaultMinTTL(lifetime: 300) == 30)
        #expect(p.defaultMinTTL(lifetime: 3600) == 60)
        #expect(p.defaultMinTTL(lifetime: nil) == 60)
        #expect(RefreshPolicy(jitterSeconds: 4).defaultMinTTL(lifetime: 60) == 4)
        #expect(RefreshPolicy(leadSeconds: 20).defaultMinTTL(lifetime: 60) == 10)
    }

    @Test("whatever the lifetime, lead and jitter draw, the timer refreshes while a default request is still served")
    func timerComesFirst() {
        for p in [RefreshPolicy(), RefreshPolicy(jitterSeconds: 5), RefreshPolicy(leadSeconds: 30, jitterSeconds: 10),
                  RefreshPolicy(leadFraction: 0.5, minTTL: 600)] {
            for lifetime in [2.0, 10, 60, 61, 300, 3600, 86_400] {
                for jitter in [-1.0, -0.5, 0, 0.5, 1] {
                    let next = p.nextRefresh(issuedAt: t0, expiresAt: t0 + lifetime, jitter: jitter)
                    let leftAtRefresh = (t0 + lifetime).timeIntervalSince(next)
                    #expect(leftAtRefresh >= 2 * p.defaultMinTTL(lifetime: lifetime) - 0.001,
                            "lifetime \(lifetime), jitter \(jitter): refreshed with \(leftAtRefresh) s left")
                }
            }
        }
    }
}
