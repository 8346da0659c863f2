import BrokerCore
import Foundation
import Testing

/// The refresh promise for every kind of grant a provider descriptor describes: reusable refresh
/// tokens, tokens that never expire, grants with their own lifetime, and refusals read as the
/// descriptor says. No clock runs: `now` is an argument.
@Suite("Grants of every kind (provider descriptors)")
struct GrantKindTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func ctx(_ grant: GrantLifetime = GrantLifetime(), _ refusals: RefusalCodes = RefusalCodes()) -> RefreshContext {
        RefreshContext(now: t0, patience: 120, draw: 1, jitter: 0, grant: grant, refusals: refusals)
    }

    func sent(_ c: RefreshContext) -> (Session, RefreshAttempt) {
        let row = Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: [], accessToken: "at-0",
                          accessExpiresAt: t0 + 10, accessLifetime: 3600, refreshToken: "rt-0", nextRefreshAt: t0 - 1, version: 7,
                          grantedAt: t0 - 86_400, createdAt: t0 - 86_400, lastUsedAt: t0 - 60, lastRefreshedAt: t0 - 3000)
        guard case .send(let w, let a, _) = RefreshMachine.start(row, .demand(seenVersion: 7, need: TokenRequirement(minTTL: 60)), c, attemptID: "a1") else {
            Issue.record("expected a send")
            return (row, RefreshAttempt(id: "a1", startedAt: t0))
        }
        return (w, a)
    }

    @Test("a lost answer of a reusable refresh token is retried at once: its token may be presented again")
    func reusableRetried() {
        var g = GrantLifetime()
        g.refreshTokens = .reusable
        let (w, a) = sent(ctx(g))
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.unanswered("timeout")), ctx(g))
        #expect(f.next == .again && f.write?.attempt == nil && f.write?.state == .active && f.write?.refreshToken == "rt-0")
        // A rotating one is never presented again to find out: it is resolved with evidence.
        let (w2, a2) = sent(ctx())
        #expect(RefreshMachine.finish(w2, attempt: a2, sentAt: t0, outcome: .failed(.unanswered("timeout")), ctx()).next == .resolve)
    }

    @Test("an answer without a new refresh token keeps the old one; kept members are replaced; the provider's grant lifetime shortens the policy's")
    func reusableKeepsToken() {
        let (w, a) = sent(ctx())
        var grant = TokenGrant(accessToken: "at-1", tokenType: .bearer, expiresIn: 60, refreshToken: nil, scope: nil, idToken: nil,
                               metadata: #"{"instance_url":"https://na1.example"}"#, grantExpiresIn: 3600)
        var f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx())
        #expect(f.write?.refreshToken == "rt-0" && f.write?.metadata == #"{"instance_url":"https://na1.example"}"#)
        #expect(f.write?.grantExpiresAt == t0 + 3600)
        grant.metadata = nil
        f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx())
        #expect(f.write?.metadata == nil, "a row without metadata keeps none")
    }

    @Test("a token that never expires is never scheduled and serves any min_ttl; an expiring one without expires_in gets the descriptor's lifetime")
    func neverExpires() {
        var g = GrantLifetime()
        g.accessTokenExpires = false
        let (w, a) = sent(ctx(g))
        let grant = TokenGrant(accessToken: "at-1", tokenType: .bearer, expiresIn: nil, refreshToken: nil, scope: nil, idToken: nil)
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx(g))
        #expect(f.write?.accessExpiresAt == Session.neverExpires && f.write?.accessNeverExpires == true && f.write?.nextRefreshAt == nil)
        #expect(f.write.map { TokenDecision.decide($0, TokenRequirement(minTTL: 86_400 * 365), now: t0 + 86_400 * 900) } == .serve)
        g.accessTokenExpires = true
        g.defaultExpiresIn = 7200
        #expect(grant.expiresAt(sentAt: t0, g) == t0 + 7200)
    }

    @Test("refusals are read as the descriptor says: invalid_request is retried by default, client codes refuse the client, others end the grant")
    func refusalsByDescriptor() {
        let o = { (code: String) in TokenEndpointError.oauth(OAuthError(error: code, description: nil, status: 400)) }
        #expect(RefreshFailure.classify(o("invalid_request")) == .retried(reason: "invalid_request"))
        #expect(RefreshFailure.classify(.refused(status: 400, reason: "empty")) == .retried(reason: "refused_http_400"), "a bare 400 reads as invalid_request")
        #expect(RefreshFailure.classify(.refused(status: 403, reason: "empty")) == .grantDead(reason: "refused_http_403"))
        #expect(RefreshFailure.classify(o("invalid_grant")) == .grantDead(reason: "invalid_grant"))
        #expect(RefreshFailure.classify(o("bad_refresh_token")) == .grantDead(reason: "bad_refresh_token"))
        var r = RefusalCodes()
        r.clientRefused.insert("bad_client_secret")
        r.retried = []
        #expect(RefreshFailure.classify(o("bad_client_secret"), r) == .clientRejected)
        #expect(RefreshFailure.classify(o("invalid_request"), r) == .grantDead(reason: "invalid_request"))
        #expect(RefreshFailure.classify(.refused(status: 400, reason: "empty"), r) == .grantDead(reason: "refused_http_400"))
        // Through the machine: a retried refusal keeps the session and its token, backing off.
        let (w, a) = sent(ctx())
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(o("invalid_request")), ctx())
        #expect(f.write?.state == .active && f.write?.refreshToken == "rt-0" && f.write?.backoffUntil != nil)
        #expect(f.event?.code == "refresh_refused_retried" && f.health == .failed(retryAfter: nil))
    }

    @Test("a forced refresh whose reusable token's answer was lost refreshes again: the retry's write is not taken for somebody else's refresh")
    func forcedAfterRetry() {
        var g = GrantLifetime()
        g.refreshTokens = .reusable
        let c = ctx(g)
        let row = Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: [], accessToken: "at-0",
                          accessExpiresAt: t0 + 3000, accessLifetime: 3600, refreshToken: "rt-0", nextRefreshAt: t0 + 2000, version: 7,
                          grantedAt: t0 - 86_400, createdAt: t0 - 86_400, lastUsedAt: t0 - 60, lastRefreshedAt: t0 - 600)
        let need = TokenRequirement(minTTL: 60, forceRefresh: true)
        var flight = RefreshFlight(.demand(seenVersion: 7, need: need), now: t0, lockTimeout: 10)
        #expect(flight.begin(holdingAnswer: false) == .start(.lock(timeout: 10)))
        guard case .send(let w, let a, _) = RefreshMachine.start(row, flight.trigger, c, attemptID: "a1") else { Issue.record("expected a send"); return }
        _ = flight.started(.send(write: w, attempt: a, refreshToken: "rt-0"), row: row, now: t0)
        let lost = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.unanswered("connection closed")), c)
        #expect(lost.next == .again)
        #expect(flight.answered(lost) == .start(.lock(timeout: 10)))
        // The row the retry wrote still holds the old access token: the forced refresh sends again.
        guard let retried = lost.write, case .send = RefreshMachine.start(retried, flight.trigger, c, attemptID: "a2") else {
            Issue.record("the forced refresh served the token it was asked to replace")
            return
        }
    }
}
