import BrokerCore
import Foundation
import Testing

@Suite("Token decision (single-flight)")
struct TokenDecisionTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func session(ttl: TimeInterval?, lifetime: TimeInterval? = 3600, state: SessionState = .active, version: Int64 = 1) -> Session {
        Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: ["openid", "read"],
                accessToken: ttl == nil ? nil : "at", accessExpiresAt: ttl.map { now + $0 }, accessLifetime: lifetime,
                refreshToken: "rt", state: state, version: version, grantedAt: now, createdAt: now)
    }

    @Test("a token living at least min_ttl is served")
    func servesFreshToken() {
        #expect(TokenDecision.decide(session(ttl: 600), TokenRequirement(minTTL: 60), now: now) == .serve)
    }

    @Test("a token living less than min_ttl is refreshed")
    func refreshesExpiring() {
        #expect(TokenDecision.decide(session(ttl: 30), TokenRequirement(minTTL: 60), now: now) == .refresh)
        #expect(TokenDecision.decide(session(ttl: nil), TokenRequirement(minTTL: 0), now: now) == .refresh)
    }

    @Test("force_refresh refreshes a fresh token")
    func forceRefreshes() {
        #expect(TokenDecision.decide(session(ttl: 600), TokenRequirement(minTTL: 60, forceRefresh: true), now: now) == .refresh)
    }

    @Test("sessions not active are refused with their state")
    func refusesInactive() {
        #expect(TokenDecision.decide(session(ttl: 600, state: .needsReauth), TokenRequirement(minTTL: 0), now: now)
            == .reject(.sessionNotActive(.needsReauth)))
        #expect(TokenDecision.decide(session(ttl: 600, state: .revoked), TokenRequirement(minTTL: 0), now: now)
            == .reject(.sessionNotActive(.revoked)))
    }

    @Test("scopes the session lacks are refused, never narrowed by refresh")
    func refusesMissingScope() {
        #expect(TokenDecision.decide(session(ttl: 600), TokenRequirement(minTTL: 0, scopes: ["read", "write"]), now: now)
            == .reject(.insufficientScope(missing: ["write"])))
    }

    @Test("min_ttl beyond the IdP's lifetime is refused with the maximum")
    func refusesImpossibleTTL() {
        #expect(TokenDecision.decide(session(ttl: 30, lifetime: 300), TokenRequirement(minTTL: 600), now: now)
            == .reject(.minTTLTooLong(maximum: 299)))
    }

    @Test("under the lock, a version moved by another replica is served, even when forced")
    func lockedServesOthersRefresh() {
        let moved = session(ttl: 3500, version: 2)
        #expect(TokenDecision.decideLocked(moved, TokenRequirement(minTTL: 60, forceRefresh: true), seenVersion: 1, now: now) == .serve)
        #expect(TokenDecision.decideLocked(moved, TokenRequirement(minTTL: 60, forceRefresh: true), seenVersion: 2, now: now) == .refresh)
    }

    @Test("under the lock, an unchanged expiring row is refreshed")
    func lockedRefreshesUnchanged() {
        #expect(TokenDecision.decideLocked(session(ttl: 30), TokenRequirement(minTTL: 60), seenVersion: 1, now: now) == .refresh)
    }

    @Test("under the lock, a session without a refresh token needs re-authentication")
    func lockedWithoutRefreshToken() {
        var s = session(ttl: 30)
        s.refreshToken = nil
        #expect(TokenDecision.decideLocked(s, TokenRequirement(minTTL: 60), seenVersion: 1, now: now) == .reject(.sessionNotActive(.needsReauth)))
    }

    @Test("during a backoff a token that does not satisfy the caller is refused from memory, with Retry-After")
    func backoffRefusedFromMemory() {
        var s = session(ttl: 30)
        s.backoffUntil = now + 4.5
        #expect(TokenDecision.decide(s, TokenRequirement(minTTL: 60), now: now) == .reject(.idpUnavailable(retryAfter: 5)))
        #expect(TokenDecision.decide(s, TokenRequirement(minTTL: 10), now: now) == .serve)
    }

    @Test("while a refresh attempt is in flight the held token is not served")
    func attemptInFlightNotServed() {
        var s = session(ttl: 600)
        s.attempt = RefreshAttempt(id: "a", startedAt: now)
        #expect(TokenDecision.decide(s, TokenRequirement(minTTL: 60), now: now) == .refresh)
    }
}
