import BrokerCore
import Foundation
import Testing

@Suite("Refresh policy (spec §5)")
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
}
