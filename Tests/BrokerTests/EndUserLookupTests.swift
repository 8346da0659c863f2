@testable import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

/// Tokens by the application's own id of its user (`end_user`) at a client: the same choice as
/// by subject, answered from memory once resolved, chosen again when that user gets a new
/// session or the chosen one ends.
@Suite("Token lookup by end user")
struct EndUserLookupTests {
    /// Two active sessions of `endUser` at "app", one created a second after the other.
    func olderAndNewer(_ h: TokenServiceHarness, _ endUser: String) throws -> (older: Session, newer: Session) {
        let older = try h.addSession(subject: endUser + "-gh-old", ttl: 3000, endUser: endUser)
        h.clock.advance(by: 1)
        return (older, try h.addSession(subject: endUser + "-gh-new", ttl: 3000, endUser: endUser))
    }

    @Test("by end user: the newest active session of that user at the client; not a subject of that name, not another tenant's user")
    func newestActiveOfThatUser() async throws {
        let h = try TokenServiceHarness()
        let (older, newer) = try olderAndNewer(h, "u-7")
        h.clock.advance(by: 1)
        _ = try h.addSession(subject: "u-7", ttl: 3000)             // a subject of the same name: another user
        _ = try h.addSession(tenant: "t2", subject: "gh-9", ttl: 3000, endUser: "u-7")
        let t = try await h.token(.endUser(client: "app", endUser: "u-7")).get()
        #expect(t.sessionID == newer.id && t.endUser == "u-7" && t.subject == "u-7-gh-new")
        #expect(t.sessionID != older.id)
        #expect(await h.token(.endUser(client: "app", endUser: "nobody")) == .failure(.notFound("session")))
        #expect(await h.token(.endUser(client: "other", endUser: "u-7")) == .failure(.notFound("session")))
        let there = try await h.token(.endUser(client: "app", endUser: "u-7"), tenant: "t2").get()
        #expect(there.subject == "gh-9" && there.sessionID != newer.id)
    }

    @Test("once resolved, an end user's token is answered from memory")
    func cached() async throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 3000, endUser: "u-1")
        #expect(h.cached(.endUser(client: "app", endUser: "u-1")) == nil)   // first: read from the store
        #expect(try await h.token(.endUser(client: "app", endUser: "u-1")).get().sessionID == s.id)
        #expect(try h.cached(.endUser(client: "app", endUser: "u-1"))?.get().sessionID == s.id)
        #expect(h.cached(.subject(client: "app", subject: "u-1")) == nil, "the end user's entry answered a subject of the same name")
    }

    @Test("a new session of the end user, announced, is the one handed out next")
    func newSessionAnnounced() async throws {
        let h = try TokenServiceHarness()
        let first = try h.addSession(ttl: 3000, endUser: "u-2")
        #expect(try await h.token(.endUser(client: "app", endUser: "u-2")).get().sessionID == first.id)
        h.clock.advance(by: 1)
        let second = try h.addSession(subject: "gh-new", ttl: 3000, endUser: "u-2")
        // Until the notice comes, memory answers the session it resolved.
        #expect(try h.cached(.endUser(client: "app", endUser: "u-2"))?.get().sessionID == first.id)
        h.service.forget(.endUser(tenant: "t1", client: "app", endUser: "u-2"))
        #expect(h.cached(.endUser(client: "app", endUser: "u-2")) == nil)
        #expect(try await h.token(.endUser(client: "app", endUser: "u-2")).get().sessionID == second.id)
    }

    @Test("the chosen session revoked: the end user's other active session is handed out; none left: the revoked state is answered")
    func revokedSessionChosenAgain() async throws {
        let h = try TokenServiceHarness()
        let (older, newer) = try olderAndNewer(h, "u-3")
        #expect(try await h.token(.endUser(client: "app", endUser: "u-3")).get().sessionID == newer.id)
        // Revoked as RevocationService does: the row written, the revoked version put in the cache.
        func revoke(_ s: Session) throws {
            let after: Session = try h.store.withRefreshLock(tenant: "t1", id: s.id, timeout: 1) { locked in
                var w = locked
                w.version += 1
                w.state = .revoked
                w.accessToken = nil
                w.refreshToken = nil
                return (w, w)
            }
            h.service.cache.put(after, now: h.clock.now())
        }
        try revoke(newer)
        #expect(h.cached(.endUser(client: "app", endUser: "u-3")) == nil)
        #expect(try await h.token(.endUser(client: "app", endUser: "u-3")).get().sessionID == older.id)
        try revoke(older)
        #expect(await h.token(.endUser(client: "app", endUser: "u-3")) == .failure(.sessionNotActive(.revoked)))
    }

    @Test("a batch answers end user items beside session and subject items")
    func batch() async throws {
        let h = try TokenServiceHarness()
        let a = try h.addSession(subject: "gh-a", ttl: 3000, endUser: "u-a")
        let b = try h.addSession(subject: "gh-b", ttl: 3000)
        let targets: [TokenTarget] = [.endUser(client: "app", endUser: "u-a"), .session(b.id), .endUser(client: "app", endUser: "u-none"),
                                      .subject(client: "app", subject: "gh-b")]
        func run() async -> [Result<IssuedToken, BrokerError>] {
            await withCheckedContinuation { c in
                if let now = h.service.batch(by: h.worker, tenant: "t1", targets: targets, request: TokenRequest(minTTL: 60),
                                             completion: { c.resume(returning: $0) }) {
                    c.resume(returning: now)
                }
            }
        }
        let results = await run()
        #expect(try results[0].get().sessionID == a.id && results[0].get().endUser == "u-a")
        #expect(try results[1].get().sessionID == b.id && results[1].get().endUser == nil)
        #expect(results[2] == .failure(.notFound("session")))
        #expect(try results[3].get().sessionID == b.id)
        // Again, the resolved items from memory.
        let again = await run()
        #expect(try again[0].get().sessionID == a.id)
    }
}
