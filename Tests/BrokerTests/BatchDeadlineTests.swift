@testable import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

/// A batch answers within the caller's deadline, and no answer carries less life than it promises.
@Suite("Batches within the deadline")
struct BatchDeadlineTests {
    func batch(_ h: TokenServiceHarness, _ ids: [String], _ request: TokenRequest) async -> [Result<IssuedToken, BrokerError>] {
        await withCheckedContinuation { c in
            if let now = h.service.batch(by: h.worker, tenant: "t1", targets: ids.map { .session($0) }, request: request,
                                         completion: { c.resume(returning: $0) }) {
                c.resume(returning: now)
            }
        }
    }

    @Test("fresh items come within the deadline with the life they promise; an item whose refresh the IdP holds is refresh_busy")
    func heldRefreshDoesNotHoldTheBatch() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint(gated: true), lockTimeout: 1)
        let fresh = try (0..<3).map { try h.addSession(subject: "u\($0)", ttl: 3000).id }
        let expiring = try h.addSession(subject: "late", ttl: 10).id
        let started = Date()
        let results = await batch(h, fresh + [expiring], TokenRequest(minTTL: 60))
        let waited = Date().timeIntervalSince(started)
        h.endpoint.open()
        // The held refresh is released only after the batch returned: its answer came without it.
        // The bound leaves room for a loaded machine (the deadline is 1 s).
        #expect(waited < 8, "the batch waited \(waited) s for the held refresh")
        for r in results.prefix(3) { #expect(try r.get().expiresIn >= 60) }
        #expect(results[3] == .failure(.refreshBusy))
        #expect(h.endpoint.spentTokens == ["rt-0"])
    }

    @Test("an item fresh when read but no longer when the batch is written is refresh_busy, never handed out short")
    func freshItemsAreCheckedWhenWritten() async throws {
        let h = try TokenServiceHarness(endpoint: ScriptedTokenEndpoint(gated: true), lockTimeout: 1)
        let close = try h.addSession(subject: "close", ttl: 65).id      // serves min_ttl 60 when read
        let far = try h.addSession(subject: "far", ttl: 3000).id
        let expiring = try h.addSession(subject: "late", ttl: 10).id    // its refresh is held
        async let results = batch(h, [close, far, expiring], TokenRequest(minTTL: 60))
        while h.endpoint.spentTokens.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        h.clock.advance(by: 10)   // the batch waited: `close` has 55 s left, less than promised
        let r = await results
        h.endpoint.open()
        #expect(r[0] == .failure(.refreshBusy))
        #expect(try r[1].get().expiresIn == 2990)
        #expect(r[2] == .failure(.refreshBusy))
    }

    @Test("a token is written with expires_in counted when written, and refused below its promise")
    func recheck() {
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var t = IssuedToken(accessToken: "a", tokenType: .bearer, expiresAt: t0 + 100, expiresIn: 100, scope: [], sessionID: "s", subject: "u")
        t.promised = 60
        #expect(t.rechecked(at: t0 + 30)?.expiresIn == 70)
        #expect(t.rechecked(at: t0 + 40)?.expiresIn == 60)
        #expect(t.rechecked(at: t0 + 40.5) == nil)
    }
}
