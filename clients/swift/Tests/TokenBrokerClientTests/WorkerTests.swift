import Foundation
import Testing
@testable import TokenBrokerClient


/// The worker client against a live broker and the development IdP. The failure switches of
/// the IdP are process-wide, and a 503 with Retry-After opens the client's circuit in the
/// broker for that long, so these run one at a time, the one that leaves it open last.
@Suite(.serialized) struct WorkerTests {
    @Test func fetchesBySessionAndSubjectThenServesFromMemory() async throws {
        let (subject, sid) = try await Live.newSession()
        let b = Live.client()
        let t = try await b.accessToken(session: sid, minTTL: 60)
        #expect(t.sessionID == sid && t.subject == subject && t.tokenType == "Bearer" && t.expiresIn > 60)
        #expect(try await b.accessToken(session: sid, minTTL: 60) == t)
        #expect(try await b.accessToken(subject: subject, client: "app").accessToken == t.accessToken)
        #expect(await b.requestsSent == 2)
        #expect(!t.description.contains(t.accessToken))
    }

    @Test func anAppTokenIsAskedOnceThenServedFromMemory() async throws {
        let b = Live.client()
        let t = try await b.appToken(client: "app", scope: "write read", minTTL: 30)
        #expect(t.client == "app" && t.tokenType == "Bearer" && t.scope == "read write" && t.expiresIn > 30)
        #expect(try await b.appToken(client: "app", scope: "write read", minTTL: 30) == t)
        #expect(await b.requestsSent == 1)
        // Another worker gets the token the broker stored, for the same ask in any order.
        #expect(try await Live.client().appToken(client: "app", scope: "read write").accessToken == t.accessToken)
        #expect(!t.description.contains(t.accessToken))
        await #expect(throws: TokenBrokerError.self) { try await b.appToken(client: "nobody") }
    }

    /// The README's example, compiled and run as written (startANewLogin is the caller's).
    @Test func theReadmeExample() async throws {
        let (_, sid) = try await Live.newSession()
        let key = Live.key
        let broker = TokenBroker(baseURL: URL(string: Live.broker.absoluteString)!, apiKey: key, tenant: Live.tenant)
        do throws(TokenBrokerError) { let token = try await broker.accessToken(session: sid, minTTL: 60); #expect(token.sessionID == sid) }
        catch .needsReauth { startANewLogin() } catch { throw error }
        let many = try await broker.accessTokens([.session(sid), .subject("nobody", client: "app")])
        #expect(many.count == 2)
    }

    func startANewLogin() { Issue.record("an active session is not needs_reauth") }

    @Test func concurrentCallersShareOneRequestAndOneRefresh() async throws {
        let (_, sid) = try await Live.newSession()
        let b = Live.client()
        let before = try await Live.refreshes()
        let tokens = try await withThrowingTaskGroup(of: Token.self) { group in
            for _ in 0..<8 { group.addTask { try await b.accessToken(session: sid, forceRefresh: true) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1.accessToken) }
        }
        #expect(tokens.count == 1)
        #expect(await b.requestsSent == 1)
        #expect(try await Live.refreshes() - before == 1)
    }

    @Test func retryAfterIsHonoured() async throws {
        let (_, sid) = try await Live.newSession()
        let b = Live.client(maxWait: 10)
        _ = try await b.accessToken(session: sid)
        try await Live.failTokenEndpoint(status: 503, count: 1, retryAfter: 1)
        let t0 = Date()
        let t = try await b.accessToken(session: sid, forceRefresh: true)
        #expect(Date().timeIntervalSince(t0) >= 1)
        #expect(await b.requestsSent >= 3)
        #expect(t.sessionID == sid)
    }

    @Test func aRefusedGrantIsNeedsReauthAndForgetsTheToken() async throws {
        let (subject, sid) = try await Live.newSession()
        let b = Live.client()
        _ = try await b.accessToken(session: sid)
        try await Live.revokeAtIdP(subject)
        await #expect(throws: TokenBrokerError.self) { try await b.accessToken(session: sid, forceRefresh: true) }
        let sent = await b.requestsSent
        do {
            _ = try await b.accessToken(session: sid)
            Issue.record("a token after needs_reauth")
        } catch {
            guard case .needsReauth(let d) = error else { Issue.record("\(error)"); return }
            #expect(d.status == 409 && d.code == "needs_reauth")
        }
        #expect(await b.requestsSent == sent + 1, "nothing kept: asked again, and told again")
    }

    @Test func aRevokedSessionIsRevoked() async throws {
        let (_, sid) = try await Live.newSession()
        try await Live.revokeInBroker(sid)
        do {
            _ = try await Live.client().accessToken(session: sid)
            Issue.record("a token of a revoked session")
        } catch {
            guard case .revoked = error else { Issue.record("\(error)"); return }
        }
    }

    @Test func batchOneResultPerItemKeptOnesNotSent() async throws {
        let (s1, sid1) = try await Live.newSession()
        let (_, sid2) = try await Live.newSession()
        let b = Live.client()
        let kept = try await b.accessToken(session: sid1)
        let results = try await b.accessTokens([.session(sid1), .session(sid2), .session("ses_unknown"), .subject(s1, client: "app")])
        #expect(try results[0].get() == kept)
        #expect(try results[1].get().sessionID == sid2)
        guard case .failure(.notFound) = results[2] else { Issue.record("\(results[2])"); return }
        #expect(try results[3].get().sessionID == sid1)
        #expect(await b.requestsSent == 2)
    }

    @Test func unavailableOnceTheWaitIsSpent() async throws {
        let (_, sid) = try await Live.newSession()
        let b = Live.client(maxWait: 0)
        _ = try await b.accessToken(session: sid)
        try await Live.failTokenEndpoint(status: 503, count: 1, retryAfter: 2)
        do {
            _ = try await b.accessToken(session: sid, forceRefresh: true)
            Issue.record("a token despite the IdP's 503")
        } catch {
            guard case .unavailable(let d, let retryAfter) = error else { Issue.record("\(error)"); return }
            #expect(d.code == "idp_unavailable" && retryAfter == 2 && d.requestID != nil)
        }
    }
}

@Suite struct MemoryTests {
    @Test func keptUntilExpiresInMinusMarginAtMostHalfTheLifetime() throws {
        let t = try #require(Token(json: ["access_token": "at", "expires_at": "x", "expires_in": 300, "session_id": "s", "subject": "a"]))
        let k = KeptToken(t, now: 1000, margin: 30)
        #expect(k.serves(now: 1269, minTTL: 0) && !k.serves(now: 1271, minTTL: 0) && !k.serves(now: 1000, minTTL: 271))
        let short = try #require(Token(json: ["access_token": "at", "expires_at": "x", "expires_in": 20, "session_id": "s", "subject": "a"]))
        #expect(KeptToken(short, now: 0, margin: 30).validUntil == 10)
    }

    @Test func retryAfterSecondsOrDate() {
        #expect(RetryAfter.seconds("3") == 3 && RetryAfter.seconds(nil) == nil && RetryAfter.seconds("soon") == nil)
        #expect(RetryAfter.seconds("Thu, 01 Jan 1970 00:00:10 GMT", now: Date(timeIntervalSince1970: 0)) == 10)
    }
}
