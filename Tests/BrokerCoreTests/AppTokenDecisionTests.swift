import BrokerCore
import Foundation
import Testing

@Suite("App token decision: min_ttl and renewal as for sessions")
struct AppTokenDecisionTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func token(ttl: TimeInterval?, lifetime: TimeInterval = 3600, grantedAgo: TimeInterval = 3000, usedAgo: TimeInterval? = nil,
               version: Int64 = 3) -> AppToken {
        let granted = now - grantedAgo
        let expires = ttl.map { now + $0 }
        return AppToken(tenant: "t", client: "c", ask: AppTokenAsk(scopes: ["b", "a"]), accessToken: ttl == nil ? nil : "at",
                        expiresAt: expires, lifetime: lifetime,
                        renewAt: expires.map { RefreshPolicy().nextRefresh(issuedAt: granted, expiresAt: $0, jitter: 0) },
                        version: version, grantedAt: granted, lastUsedAt: usedAgo.map { now - $0 }, createdAt: granted)
    }

    @Test("asks meaning the same share one key; scope, audience and resource each make another")
    func askKeys() {
        #expect(AppTokenAsk(scopes: ["b", "a", "a"]).key == AppTokenAsk(scopes: ["a", "b"], audience: "", resource: "").key)
        let keys = Set([AppTokenAsk().key, AppTokenAsk(scopes: ["a"]).key, AppTokenAsk(audience: "a").key, AppTokenAsk(resource: "a").key,
                        AppTokenAsk(scopes: ["a", "b"]).key])
        #expect(keys.count == 5)
    }

    @Test("none stored, or dropped: grant")
    func grantsWhenNone() {
        #expect(AppTokenDecision.decide(nil, minTTL: 60, now: now) == .grant)
        #expect(AppTokenDecision.decide(token(ttl: nil), minTTL: 60, now: now) == .grant)
    }

    @Test("a token living at least min_ttl (and 1 s) is served; less, a grant")
    func freshEnough() {
        #expect(AppTokenDecision.decide(token(ttl: 600), minTTL: 60, now: now) == .serve)
        #expect(AppTokenDecision.decide(token(ttl: 59), minTTL: 60, now: now) == .grant)
        #expect(AppTokenDecision.decide(token(ttl: 0.5), minTTL: 0, now: now) == .grant)
    }

    @Test("min_ttl at or past the token's lifetime: 422 with the most it can get, before any grant")
    func minTTLTooLong() {
        #expect(AppTokenDecision.decide(token(ttl: 600, lifetime: 300), minTTL: 300, now: now) == .reject(.minTTLTooLong(maximum: 299)))
        let fresh = token(ttl: 30, lifetime: 30, grantedAgo: 0)
        #expect(AppTokenDecision.afterGrant(fresh, minTTL: 40, now: now) == .reject(.minTTLTooLong(maximum: 29)))
        #expect(AppTokenDecision.afterGrant(fresh, minTTL: 20, now: now) == .serve)
    }

    @Test("a forced renewal grants only while the row is at the version its caller saw refused")
    func forcedRenewal() {
        let t = token(ttl: 600, version: 7)
        #expect(AppTokenDecision.decideLocked(t, minTTL: 60, ifStill: 7, now: now) == .grant)
        #expect(AppTokenDecision.decideLocked(t, minTTL: 60, ifStill: 6, now: now) == .serve, "another caller renewed already")
        #expect(AppTokenDecision.decideLocked(t, minTTL: 60, ifStill: nil, now: now) == .serve)
    }

    @Test("renewal: past the policy's lead and used since its grant; an unused one just expires")
    func renewal() {
        // An hour's token: lead 300 s, so renewal at 3,300 s of its life.
        #expect(AppTokenDecision.renewalDue(token(ttl: 250, grantedAgo: 3350, usedAgo: 10), now: now))
        #expect(!AppTokenDecision.renewalDue(token(ttl: 250, grantedAgo: 3350, usedAgo: nil), now: now), "never used")
        #expect(!AppTokenDecision.renewalDue(token(ttl: 250, grantedAgo: 3350, usedAgo: 3400), now: now), "used before this grant only")
        #expect(!AppTokenDecision.renewalDue(token(ttl: 600, grantedAgo: 3000, usedAgo: 10), now: now), "before the lead")
        #expect(!AppTokenDecision.renewalDue(token(ttl: -1, grantedAgo: 3601, usedAgo: 10), now: now), "expired")
    }
}
