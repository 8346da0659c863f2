import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

@Suite("Token service")
struct TokenServiceTests {
    @Test("a forced refresh of a reusable grant whose answer was lost never answers the token it was asked to replace")
    func forcedRefreshAfterLostAnswer() async throws {
        let endpoint = ScriptedTokenEndpoint(answer: { _, n throws(TokenEndpointError) in
            if n == 1 { throw .unanswered("the connection dropped after the request") }
            throw .notSent("connection refused")
        })
        let h = try TokenServiceHarness(endpoint: endpoint)
        var reg = try #require(try h.registry.client(tenant: "t1", id: "app"))
        reg.descriptor.grant.refreshTokens = .reusable
        _ = try h.registry.putClient(reg, secret: nil, assertionKey: nil, now: h.clock.now())
        let s = try h.addSession(ttl: 3000)
        let r = await h.token(.session(s.id), TokenRequest(minTTL: 60, forceRefresh: true))
        #expect((try? r.get().accessToken) != "at-0", "\(r)")
        #expect(endpoint.spentTokens.count == 2, "the reusable token is presented again once, then the IdP is down")
    }

    @Test("a cached token is handed out without calling the IdP")
    func cachedTokenServed() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 3000)
        let first = try await h.token(.session(s.id)).get()
        #expect(first.accessToken == "at-0" && first.expiresIn == 3000)
        let fast = h.cached(.session(s.id))
        #expect(try fast?.get().accessToken == "at-0")
        #expect(h.endpoint.spentTokens.isEmpty)
    }

    @Test("a cached hand-out carries its cache entry's document memo; a new version of the session brings a new one")
    func memoFollowsTheEntry() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 3000)
        _ = try await h.token(.session(s.id)).get()
        func cached() throws -> IssuedToken? {
            try h.cached(.session(s.id))?.get()
        }
        let a = try cached(), b = try cached()
        #expect(a?.memo != nil && a?.memo === b?.memo)
        var newer = try #require(try h.store.session(tenant: "t1", id: s.id))
        newer.version += 1
        h.service.cache.put(newer, now: h.clock.now())
        #expect(try cached()?.memo !== a?.memo)
    }

    @Test("fifty concurrent callers share one refresh and get the same token")
    func concurrentCallersShareOneRefresh() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint(gated: true))
        let s = try h.addSession(ttl: 10)
        let results = Mutex<[Result<IssuedToken, BrokerError>]>([])
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<50 {
            h.service.token(by: h.worker, tenant: "t1", target: .session(s.id), request: TokenRequest(minTTL: 60)) { r in
                results.withLock { $0.append(r) }
                done.signal()
            }
        }
        while h.endpoint.spentTokens.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(50))   // let every caller join the flight
        h.endpoint.open()
        for _ in 0..<50 { done.wait() }
        #expect(h.endpoint.spentTokens == ["rt-0"])
        let tokens = Set(try results.withLock { $0 }.map { try $0.get().accessToken })
        #expect(tokens == ["at-1"])
        let stored = try h.store.session(tenant: "t1", id: s.id)
        #expect(stored?.refreshToken == "rt-1" && stored?.version == s.version + 2 && stored?.attempt == nil)   // attempt recorded, then its outcome
    }

    @Test("a response without a new refresh token keeps the old one")
    func keepsRefreshTokenWhenNoneReturned() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint(answer: ScriptedTokenEndpoint.rotating(rotate: false)))
        let s = try h.addSession(ttl: nil, refreshToken: "long-lived")
        _ = try await h.token(.session(s.id)).get()
        #expect(try h.store.session(tenant: "t1", id: s.id)?.refreshToken == "long-lived")
    }

    @Test("when another replica refreshed under the lock, the refresh token is not spent")
    func skipsWhenVersionMoved() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 10)
        _ = await h.token(.session(s.id), TokenRequest(minTTL: 0))   // cache holds version 1
        // Another replica refreshes: the row moves on without this process knowing.
        _ = try h.store.withRefreshLock(tenant: "t1", id: s.id, timeout: 1) { locked -> (write: Session?, result: Int) in
            var w = locked
            w.version += 1
            w.accessToken = "at-other"
            w.accessExpiresAt = h.clock.now() + 3600
            w.refreshToken = "rt-other"
            return (w, 0)
        }
        let t = try await h.token(.session(s.id)).get()
        #expect(t.accessToken == "at-other")
        #expect(h.endpoint.spentTokens.isEmpty)
    }

    @Test("a refresh nobody interrupts takes the lock once: the answer is written over the attempt it recorded")
    func answerWrittenOverItsAttempt() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 10)
        let t = try await h.token(.session(s.id)).get()
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(t.accessToken == "at-1" && row.accessToken == "at-1" && row.refreshToken == "rt-1")
        #expect(row.version == s.version + 2 && row.attempt == nil)
        #expect(h.store.lockings.load(ordering: .relaxed) == 1)
        #expect(h.endpoint.spentTokens == ["rt-0"])
    }

    @Test("a session revoked while its refresh was at the IdP: the answer goes through the lock, sees it, and revokes what came back")
    func answerAfterAWriteTakesTheLock() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint(gated: true))
        let s = try h.addSession(ttl: 10)
        async let answer = h.token(.session(s.id))
        while h.endpoint.spentTokens.isEmpty { try await Task.sleep(nanoseconds: 1_000_000) }
        // An admin revokes it meanwhile: the row moves on past the attempt's version.
        _ = try h.store.revoke(tenant: "t1", id: s.id, timeout: 1, now: h.clock.now())
        h.endpoint.open()
        #expect(await answer == .failure(.sessionNotActive(.revoked)))
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.state == .revoked && row.accessToken == nil && row.refreshToken == nil)
        #expect(h.store.revoked.withLock { $0 }.contains("rt-1"), "the refresh token received was not queued for revocation")
        #expect(h.store.lockings.load(ordering: .relaxed) == 3)   // the attempt, the revocation, the answer
    }

    @Test("invalid_grant makes the session needs_reauth, audited, and it is never retried")
    func invalidGrantNeedsReauth() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint { _, _ throws(TokenEndpointError) in
            throw .oauth(OAuthError(error: "invalid_grant", description: nil, status: 400))
        })
        let s = try h.addSession(ttl: 10)
        #expect(await h.token(.session(s.id)) == .failure(.sessionNotActive(.needsReauth)))
        #expect(try h.store.session(tenant: "t1", id: s.id)?.state == .needsReauth)
        #expect(h.audit.recorded.contains { $0.action == .sessionRefresh && $0.outcome == "needs_reauth" })
        #expect(h.feed.published.withLock { $0 }.contains(.session(tenant: "t1", id: s.id)))
        #expect(await h.token(.session(s.id)) == .failure(.sessionNotActive(.needsReauth)))
        #expect(h.endpoint.spentTokens.count == 1)
    }

    @Test("403 access_denied ends the grant; so does a 400 refusal (classified by status first)")
    func accessDeniedEndsTheGrant() {
        #expect(RefreshFailure.classify(.oauth(OAuthError(error: "access_denied", description: nil, status: 403))) == .grantDead(reason: "access_denied"))
        #expect(RefreshFailure.classify(.oauth(OAuthError(error: "access_denied", description: nil, status: 400))) == .grantDead(reason: "access_denied"))
    }

    @Test("an IdP's error member reaches reasons and logs only as a plain RFC 6749 code")
    func errorCodeSanitized() {
        let odd = OAuthError(error: "invalid_grant: rt-SECRET-VALUE", description: nil, status: 400)
        #expect(odd.code == "unrecognized_error" && TokenEndpointError.oauth(odd).reason == "unrecognized_error (HTTP 400)")
        #expect(RefreshFailure.classify(.oauth(odd)) == .grantDead(reason: "unrecognized_error"))
        #expect(OAuthError(error: "invalid_grant", description: nil, status: 400).code == "invalid_grant")
    }

    @Test("an IdP outage answers 503 with Retry-After and keeps the session active")
    func transientFailure() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint { _, _ throws(TokenEndpointError) in
            throw .transient(reason: "token endpoint: HTTP 503", retryAfter: 7)
        })
        let s = try h.addSession(ttl: 10)
        #expect(await h.token(.session(s.id)) == .failure(.idpUnavailable(retryAfter: 7)))
        let stored = try h.store.session(tenant: "t1", id: s.id)
        #expect(stored?.state == .active && stored?.failureCount == 1 && stored?.refreshToken == "rt-0" && stored?.accessToken == "at-0")
    }

    @Test("min_ttl longer than the token lifetime is refused before any refresh")
    func minTTLTooLong() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 3000)
        #expect(await h.token(.session(s.id), TokenRequest(minTTL: 7200)) == .failure(.minTTLTooLong(maximum: 3599)))
        #expect(h.endpoint.spentTokens.isEmpty)
    }

    @Test("lookup by subject finds the subject's session; sessions never cross tenants")
    func subjectLookupAndTenants() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(subject: "bob", ttl: 3000)
        #expect(try await h.token(.subject(client: "app", subject: "bob")).get().sessionID == s.id)
        #expect(await h.token(.session(s.id), tenant: "t2") == .failure(.notFound("session")))
        #expect(await h.token(.subject(client: "app", subject: "nobody")) == .failure(.notFound("session")))
    }

    @Test("a batch answers every item on its own")
    func batchMixed() async throws {
        let h = try TokenServiceHarness()
        let good = try h.addSession(ttl: 3000)
        let expiring = try h.addSession(subject: "carol", ttl: 5, refreshToken: "rt-carol")
        let results: [Result<IssuedToken, BrokerError>] = await withCheckedContinuation { c in
            if let now = h.service.batch(by: h.worker, tenant: "t1", targets: [.session(good.id), .session("ses_nope"), .session(expiring.id)],
                                         request: TokenRequest(minTTL: 60), completion: { c.resume(returning: $0) }) {
                c.resume(returning: now)
            }
        }
        #expect(try results[0].get().accessToken == "at-0")
        #expect(results[1] == .failure(.notFound("session")))
        #expect(try results[2].get().accessToken == "at-1")
        #expect(h.endpoint.spentTokens == ["rt-carol"])
    }

    @Test("a batch answered from memory audits and marks every hand-out: one event per item, one mark per session")
    func batchAuditedAndMarked() async throws {
        let h = try TokenServiceHarness()
        let a = try h.addSession(ttl: 3000), b = try h.addSession(subject: "bob", ttl: 3000)
        _ = await h.token(.session(a.id))
        _ = await h.token(.session(b.id))
        _ = h.service.usage.drain()
        let before = h.audit.recorded.count
        let now = h.service.batch(by: h.worker, tenant: "t1", targets: [.session(a.id), .session(b.id), .session(a.id), .session("ses_nope")],
                                  request: TokenRequest(minTTL: 60)) { _ in }
        #expect(now == nil)   // the unknown id is looked up; the rest were answered from memory
        let issued = h.audit.recorded.dropFirst(before).filter { $0.action == .tokenIssue && $0.outcome == "cached" }
        #expect(issued.map(\.session) == [a.id, b.id, a.id] && issued.allSatisfy { $0.actor == "worker-key" })
        #expect(Set(h.service.usage.drain().map(\.id)) == [a.id, b.id])
    }

    @Test("every hand-out and refusal is audited with who and which session")
    func handOutsAudited() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 3000)
        _ = await h.token(.session(s.id))
        _ = await h.token(.session("ses_nope"))
        let issues = h.audit.recorded.filter { $0.action == .tokenIssue }
        #expect(issues.contains { $0.actor == "worker-key" && $0.session == s.id && $0.outcome == "cached" })
        #expect(issues.contains { $0.actor == "worker-key" && $0.outcome == "not_found" })
    }
}
