import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

@Suite("The outbound proxy's driver: credentials added, refresh after invalid_token, rate limits, refusals")
struct ProxyServiceTests {
    /// A proxy over the token harness, the client "app" of t1 with an upstream at api.example.
    struct World {
        let h: TokenServiceHarness
        let upstream: ScriptedUpstreamTransport
        let proxy: ProxyService
        let caller = Principal(id: "proxy-key", name: "p", roles: [.proxy], tenants: ["t1"])

        init(_ script: [ScriptedUpstreamTransport.Answer], upstream settings: UpstreamSettings? = UpstreamSettings(baseURL: "https://api.example/v2"))
            throws {
            h = try TokenServiceHarness()
            var reg = try h.registry.client(tenant: "t1", id: "app")!
            reg.upstream = settings
            _ = try h.registry.putClient(reg, secret: nil, assertionKey: nil, now: h.clock.now())
            upstream = ScriptedUpstreamTransport(script)
            let cache = RegistryCache(store: h.registry, maxAge: 0)
            let apps = AppTokenService(store: InMemoryAppTokenStore(), registry: cache, endpoint: h.endpoint, dpopKeys: nil, audit: h.audit, clock: h.clock)
            proxy = ProxyService(tokens: h.service, appTokens: apps, registry: cache, transport: upstream, audit: h.audit, clock: h.clock,
                                 limits: ProxyLimits())
        }

        /// Sends one call and waits (bounded) for its answer and, for a head, the whole body.
        func call(_ target: ProxyTarget, _ method: String = "GET", tail: String = "items/7", query: String? = "a=1",
                  headers: [(name: String, value: String)] = [], body: String? = nil,
                  stream: (any ByteSource)? = nil) -> (answer: ProxyAnswer?, body: String) {
            let done = DispatchSemaphore(value: 0)
            let got = Got()
            let call = ProxyCall(tenant: "t1", target: target, method: method, tail: tail, query: query, headers: headers,
                                 body: stream ?? body.map { BufferedBody(Array($0.utf8)) })
            proxy.forward(call, by: caller) { answer in
                got.answer = answer
                guard case .head = answer else { done.signal(); return nil }
                let sink = SignallingSink(done)
                got.sink = sink
                return sink
            }
            _ = done.wait(timeout: .now() + 5)
            return (got.answer, got.sink?.text ?? "")
        }
    }

    final class Got: @unchecked Sendable {
        var answer: ProxyAnswer?
        var sink: SignallingSink?
    }

    final class SignallingSink: ByteSink, @unchecked Sendable {
        let inner = MemorySink()
        let done: DispatchSemaphore
        init(_ done: DispatchSemaphore) { self.done = done }
        func write(_ bytes: UnsafeRawBufferPointer) -> Bool { inner.write(bytes) }
        func finish(complete: Bool) {
            inner.finish(complete: complete)
            done.signal()
        }
        var text: String { inner.text }
    }

    static func status(_ a: ProxyAnswer?) -> Int? {
        guard case .head(let s, _, _) = a else { return nil }
        return s
    }

    static func header(_ a: ProxyAnswer?, _ name: String) -> String? {
        guard case .head(_, let headers, _) = a else { return nil }
        return headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func code(_ a: ProxyAnswer?) -> String? {
        guard case .refused(let e) = a else { return nil }
        return e.code
    }

    @Test("a GET carries the session's token, the caller's path and query under the base, its own headers less Authorization, Host and hop-by-hop; the answer comes back whole; audited as a proxy call, never as a hand-out")
    func forwardsWithTheToken() throws {
        let w = try World([.init(200, headers: [("Content-Type", "application/json"), ("Connection", "close"), ("X-Rate", "5")], body: "{\"ok\":1}")])
        let s = try w.h.addSession(ttl: 3600)
        let r = w.call(.session(s.id), headers: [("Accept", "application/json"), ("Authorization", "Bearer caller-own"), ("Host", "broker"),
                                                  ("Connection", "x-private"), ("X-Private", "1"), ("Tokenbroker-Subject", "a")])
        #expect(Self.status(r.answer) == 200 && r.body == "{\"ok\":1}")
        #expect(Self.header(r.answer, "x-rate") == "5" && Self.header(r.answer, "connection") == nil)
        let sent = try #require(w.upstream.sent.first)
        #expect(sent.url == "https://api.example/v2/items/7?a=1" && sent.method == "GET")
        #expect(sent.header("authorization") == "Bearer at-0" && sent.header("accept") == "application/json")
        #expect(sent.header("host") == nil && sent.header("x-private") == nil && sent.header("connection") == nil && sent.header("tokenbroker-subject") == nil)
        #expect(sent.headers.filter { $0.name.lowercased() == "authorization" }.count == 1)
        let events = w.h.audit.recorded
        #expect(events.contains { $0.action == .proxyCall && $0.outcome == "2xx" && $0.session == s.id && $0.actor == "proxy-key" })
        #expect(!events.contains { $0.action == .tokenIssue }, "the proxy's caller never received a token")
    }

    @Test("invalid_token: one refresh, one resend with the new token; concurrent callers that saw the same token cause one refresh")
    func refreshOn401() throws {
        let dead = ScriptedUpstreamTransport.Answer(401, headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
        let w = try World([dead, .init(200, body: "ok")])
        let s = try w.h.addSession(ttl: 3600)
        let r = w.call(.session(s.id))
        #expect(Self.status(r.answer) == 200 && r.body == "ok")
        #expect(w.h.endpoint.spentTokens == ["rt-0"])
        #expect(w.upstream.sent.map { $0.header("authorization") } == ["Bearer at-0", "Bearer at-1"])
        // A late caller whose token was already replaced is not refreshed again: it is served the new one.
        let w2 = try World([.init(200, body: "ok")])
        let s2 = try w2.h.addSession(ttl: 3600)
        var request = TokenRequest()
        request.audited = false
        let replaced = waitFor { done in w2.h.service.replacing("at-old", by: w2.caller, tenant: "t1", session: s2.id, request: request, completion: done) }
        #expect((try? replaced.get().accessToken) == "at-0" && w2.h.endpoint.spentTokens.isEmpty)
    }

    @Test("a 401 after the refresh goes back with the header saying the token was refreshed")
    func secondRefusal() throws {
        let dead = ScriptedUpstreamTransport.Answer(401, headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
        let w = try World([dead, dead])
        let s = try w.h.addSession(ttl: 3600)
        let r = w.call(.session(s.id))
        #expect(Self.status(r.answer) == 401 && Self.header(r.answer, "tokenbroker-token-refreshed") == "true")
        #expect(w.upstream.sent.count == 2 && w.h.endpoint.spentTokens.count == 1)
    }

    @Test("a streamed body (unknown length, read once): invalid_token renews the token for the calls to come, and the 401 goes back saying so; nothing is resent")
    func streamedBodyNotResent() throws {
        let dead = ScriptedUpstreamTransport.Answer(401, headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
        let w = try World([dead, .init(200)])
        let s = try w.h.addSession(ttl: 3600)
        let got = w.call(.session(s.id), "POST", tail: "upload", query: nil, stream: OnceBody(Array(repeating: 7, count: 100_000)))
        #expect(Self.status(got.answer) == 401 && Self.header(got.answer, "tokenbroker-token-refreshed") == "true")
        #expect(w.upstream.sent.count == 1 && w.upstream.sent[0].body.count == 100_000 && w.h.endpoint.spentTokens == ["rt-0"])
        #expect(Self.status(w.call(.session(s.id)).answer) == 200 && w.upstream.sent.last?.header("authorization") == "Bearer at-1")
    }

    /// A body read once, of unknown length: what a caller streams in.
    final class OnceBody: ByteSource, @unchecked Sendable {
        let inner: BufferedBody
        init(_ bytes: [UInt8]) { inner = BufferedBody(bytes) }
        func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? { inner.read(into: buffer) }
        var length: Int? { nil }
        var replayable: Bool { false }
        func rewind() -> Bool { false }
    }

    @Test("429 with Retry-After: passed on, then calls within the wait are answered 429 without reaching the upstream; after it, they reach it")
    func rateLimit() throws {
        let w = try World([.init(429, headers: [("Retry-After", "2")], body: "slow down"), .init(200, body: "ok")])
        let s = try w.h.addSession(ttl: 3600)
        let first = w.call(.session(s.id))
        #expect(Self.status(first.answer) == 429 && first.body == "slow down")
        let second = w.call(.session(s.id))
        #expect(Self.code(second.answer) == "upstream_rate_limited" && w.upstream.sent.count == 1)
        guard case .refused(let e) = second.answer, case .proxy(let refusal) = e else { Issue.record("not refused"); return }
        #expect(refusal.retryAfter == 2)
        w.h.clock.advance(by: 2)
        #expect(Self.status(w.call(.session(s.id)).answer) == 200 && w.upstream.sent.count == 2)
    }

    @Test("a redirect to another host is refused and nothing is sent there; a path that leaves the base is refused before any call")
    func refusals() throws {
        let w = try World([.init(302, headers: [("Location", "https://evil.example/steal")])])
        let s = try w.h.addSession(ttl: 3600)
        #expect(Self.code(w.call(.session(s.id)).answer) == "upstream_redirect_refused")
        #expect(w.upstream.sent.map(\.url) == ["https://api.example/v2/items/7?a=1"])
        #expect(Self.code(w.call(.session(s.id), tail: "../admin").answer) == "invalid_upstream_path")
        #expect(w.upstream.sent.count == 1)
    }

    @Test("a client without an upstream: 409 no_upstream, nothing sent; an unknown session: 404")
    func noUpstream() throws {
        let w = try World([], upstream: nil)
        let s = try w.h.addSession(ttl: 3600)
        #expect(Self.code(w.call(.session(s.id)).answer) == "no_upstream")
        #expect(Self.code(w.call(.session("ses_nope")).answer) == "not_found")
        #expect(w.upstream.sent.isEmpty)
    }

    @Test("the app token: a client-credentials grant, then every call carries it")
    func appToken() throws {
        let w = try World([.init(200, body: "a"), .init(200, body: "b")])
        #expect(Self.status(w.call(.app(client: "app")).answer) == 200)
        #expect(Self.status(w.call(.app(client: "app"), "POST", body: "{}").answer) == 200)
        #expect(w.upstream.sent.map { $0.header("authorization") } == ["Bearer at-1", "Bearer at-1"])
        #expect(w.upstream.sent.last?.body == Array("{}".utf8))
    }

    /// Runs `work` and waits (bounded) for its completion.
    func waitFor(_ work: (@escaping @Sendable (Result<IssuedToken, BrokerError>) -> Void) -> Void) -> Result<IssuedToken, BrokerError> {
        let done = DispatchSemaphore(value: 0)
        let box = Got2()
        work { r in
            box.r = r
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
        return box.r ?? .failure(.internalError)
    }

    final class Got2: @unchecked Sendable { var r: Result<IssuedToken, BrokerError>? }
}
