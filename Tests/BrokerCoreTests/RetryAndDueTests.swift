import BrokerCore
import Foundation
import Testing

@Suite("Retries and due sessions")
struct RetryAndDueTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("backoff doubles per failure with full jitter, capped")
    func backoff() {
        let p = RetryPolicy(base: 1, cap: 300)
        #expect(p.nextAttempt(after: 1, retryAfter: nil, now: now, draw: 1) == now + 1)
        #expect(p.nextAttempt(after: 4, retryAfter: nil, now: now, draw: 1) == now + 8)
        #expect(p.nextAttempt(after: 4, retryAfter: nil, now: now, draw: 0.5) == now + 4)
        #expect(p.nextAttempt(after: 40, retryAfter: nil, now: now, draw: 1) == now + 300)
        #expect(p.nextAttempt(after: 3, retryAfter: nil, now: now, draw: 0) == now + 0.1)
    }

    @Test("Retry-After is honoured as a floor")
    func retryAfter() {
        #expect(RetryPolicy().nextAttempt(after: 1, retryAfter: 30, now: now, draw: 1) == now + 30)
    }

    @Test("a due session is refreshed; a moved schedule is followed; inactive sessions dropped")
    func due() {
        var s = Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: [], refreshToken: "rt",
                        nextRefreshAt: now - 1, grantedAt: now, createdAt: now)
        #expect(DueDecision.decide(s, now: now) == .refresh)
        s.nextRefreshAt = now + 60
        #expect(DueDecision.decide(s, now: now) == .reschedule(now + 60))
        s.state = .needsReauth
        #expect(DueDecision.decide(s, now: now) == .drop)
        s.state = .active
        s.refreshToken = nil
        #expect(DueDecision.decide(s, now: now) == .drop)
    }
}
