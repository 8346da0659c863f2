import BrokerCore
import Foundation
import Testing

@Suite("Outbound proxy: the machine's decisions on each upstream answer")
struct ProxyMachineTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func machine(_ method: String = "GET", body: Bool = false, replayable: Bool = true, dpop: Bool = false, plain401: Bool = false,
                 retry: Bool = false, budget: TimeInterval = 0) -> ProxyMachine {
        ProxyMachine(.init(method: method, url: "https://api.example.com/v1/x?q=1", origin: "https://api.example.com", replayable: replayable,
                           hasBody: body, dpop: dpop, plain401InvalidToken: plain401, retryRateLimited: retry, retryBudget: budget))
    }
    func bearer(_ error: String) -> [(name: String, value: String)] { [("WWW-Authenticate", "Bearer error=\"\(error)\"")] }

    @Test("a 200 goes back as it came")
    func plain() {
        var m = machine()
        #expect(m.start(nonce: nil) == .send(.init(method: "GET", url: "https://api.example.com/v1/x?q=1", withBody: false, nonce: nil)))
        #expect(m.head(status: 200, headers: [], now: now).action == .deliver(tokenRefreshed: nil))
    }

    @Test("invalid_token: one forced refresh, one resend; a second 401 goes back saying the token was refreshed")
    func invalidTokenReplayable() {
        var m = machine("POST", body: true)
        _ = m.start(nonce: nil)
        let s = m.head(status: 401, headers: bearer("invalid_token"), now: now)
        #expect(s.action == .refresh && !s.refreshFirst)
        guard case .send(let again) = m.refreshed(ok: true) else { Issue.record("no resend"); return }
        #expect(again.withBody && again.method == "POST")
        #expect(m.head(status: 401, headers: bearer("invalid_token"), now: now).action == .deliver(tokenRefreshed: true))
    }

    @Test("invalid_token with a body that cannot be replayed: the refresh runs, then the 401 goes back with the header")
    func invalidTokenStreamed() {
        var m = machine("POST", body: true, replayable: false)
        _ = m.start(nonce: nil)
        let s = m.head(status: 401, headers: bearer("invalid_token"), now: now)
        #expect(s.action == .refresh && s.refreshFirst)
        #expect(m.refreshed(ok: true) == .deliver(tokenRefreshed: true))
    }

    @Test("a failed refresh answers with its error")
    func refreshFails() {
        var m = machine()
        _ = m.start(nonce: nil)
        _ = m.head(status: 401, headers: bearer("invalid_token"), now: now)
        #expect(m.refreshed(ok: false) == .failRefresh)
    }

    @Test("a bare 401 is an invalid token only where the client or descriptor says so; other errors pass")
    func plain401() {
        var a = machine()
        _ = a.start(nonce: nil)
        #expect(a.head(status: 401, headers: [("WWW-Authenticate", "Bearer realm=\"x\"")], now: now).action == .deliver(tokenRefreshed: nil))
        var b = machine(plain401: true)
        _ = b.start(nonce: nil)
        #expect(b.head(status: 401, headers: [], now: now).action == .refresh)
        var c = machine(plain401: true)
        _ = c.start(nonce: nil)
        #expect(c.head(status: 401, headers: bearer("insufficient_scope"), now: now).action == .deliver(tokenRefreshed: nil))
    }

    @Test("DPoP: use_dpop_nonce is answered once with the nonce; a second time goes back")
    func dpopNonce() {
        var m = machine(dpop: true)
        _ = m.start(nonce: nil)
        let h: [(name: String, value: String)] = [("WWW-Authenticate", "DPoP error=\"use_dpop_nonce\""), ("DPoP-Nonce", "n-1")]
        #expect(m.head(status: 401, headers: h, now: now).action == .send(.init(method: "GET", url: "https://api.example.com/v1/x?q=1", withBody: false, nonce: "n-1")))
        #expect(m.head(status: 401, headers: h, now: now).action == .deliver(tokenRefreshed: nil))
    }

    @Test("429 with Retry-After: the wait is recorded and the 429 goes back; opted-in idempotent requests wait within the budget")
    func rateLimited() {
        var m = machine()
        _ = m.start(nonce: nil)
        let s = m.head(status: 429, headers: [("Retry-After", "2")], now: now)
        #expect(s.action == .deliver(tokenRefreshed: nil))
        #expect(s.backoffUntil == now.addingTimeInterval(2))

        var r = machine(retry: true, budget: 3)
        _ = r.start(nonce: nil)
        #expect(r.head(status: 503, headers: [("Retry-After", "2")], now: now).action == .wait(2))
        #expect(r.waited() == .send(.init(method: "GET", url: "https://api.example.com/v1/x?q=1", withBody: false, nonce: nil)))
        #expect(r.head(status: 429, headers: [("Retry-After", "2")], now: now).action == .deliver(tokenRefreshed: nil))   // over budget

        var p = machine("POST", body: true, retry: true, budget: 30)
        _ = p.start(nonce: nil)
        #expect(p.head(status: 429, headers: [("Retry-After", "1")], now: now).action == .deliver(tokenRefreshed: nil))   // not idempotent
    }

    @Test("a 503 without Retry-After is just an answer")
    func plain503() {
        var m = machine(retry: true, budget: 10)
        _ = m.start(nonce: nil)
        let s = m.head(status: 503, headers: [], now: now)
        #expect(s.action == .deliver(tokenRefreshed: nil) && s.backoffUntil == nil)
    }

    @Test("a redirect to another origin is refused naming its host; nothing is sent there")
    func otherOrigin() {
        for loc in ["https://evil.example.net/steal", "http://api.example.com/v1/y", "https://api.example.com:8443/y", "//evil.example.net/x"] {
            var m = machine()
            _ = m.start(nonce: nil)
            guard case .refuse(.redirectRefused) = m.head(status: 302, headers: [("Location", loc)], now: now).action else {
                Issue.record("\(loc) followed"); continue
            }
        }
    }

    @Test("same-origin redirects: 303 becomes GET without a body; 307 keeps method and replayable body; bounded")
    func sameOrigin() {
        var m = machine("POST", body: true)
        _ = m.start(nonce: nil)
        #expect(m.head(status: 303, headers: [("Location", "/v1/done")], now: now).action
                == .send(.init(method: "GET", url: "https://api.example.com/v1/done", withBody: false, nonce: nil)))
        var k = machine("PUT", body: true)
        _ = k.start(nonce: nil)
        #expect(k.head(status: 307, headers: [("Location", "y")], now: now).action
                == .send(.init(method: "PUT", url: "https://api.example.com/v1/y", withBody: true, nonce: nil)))
        var s = machine("PUT", body: true, replayable: false)
        _ = s.start(nonce: nil)
        #expect(s.head(status: 308, headers: [("Location", "y")], now: now).action == .deliver(tokenRefreshed: nil))
        var loop = machine()
        _ = loop.start(nonce: nil)
        for _ in 0..<ProxyMachine.maxRedirects { _ = loop.head(status: 302, headers: [("Location", "/a")], now: now) }
        #expect(loop.head(status: 302, headers: [("Location", "/a")], now: now).action == .refuse(.tooManyRedirects))
    }
}
