import BrokerCore
import Foundation
import Testing

@Suite("Outbound proxy: URLs, headers, challenges, Retry-After, backoffs")
struct ProxyCoreTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func resolve(_ base: String, _ tail: String, query: String? = nil, metadata: String? = nil) -> Result<UpstreamURL, ProxyRefusal> {
        UpstreamURL.resolve(base: base, metadata: metadata, tail: tail, query: query, allowHTTP: false)
    }

    @Test("a tail goes under the base's path, with the caller's query")
    func underBase() throws {
        let u = try resolve("https://api.example.com/v2/", "users/42", query: "a=1&b=%20").get()
        #expect(u.url == "https://api.example.com/v2/users/42?a=1&b=%20")
        #expect(u.origin == "https://api.example.com")
        #expect(u.host == "api.example.com")
        #expect(try resolve("https://api.example.com", "").get().url == "https://api.example.com/")
    }

    @Test("{member} is filled from the session's metadata (Salesforce's instance_url); a missing one is refused")
    func member() throws {
        let u = try resolve("{instance_url}/services/data", "v60.0/sobjects", metadata: #"{"instance_url":"https://na1.salesforce.com"}"#).get()
        #expect(u.url == "https://na1.salesforce.com/services/data/v60.0/sobjects")
        guard case .failure(.noUpstream) = resolve("{instance_url}/x", "y", metadata: "{}") else { Issue.record("missing member served"); return }
        guard case .failure(.noUpstream) = resolve("{instance_url}/x", "y", metadata: #"{"instance_url":"https://a@evil.com"}"#) else {
            Issue.record("user info from metadata served"); return
        }
    }

    @Test("traversal, encoded slashes and absolute URLs in the tail are refused")
    func traversal() {
        for tail in ["../admin", "a/../../b", "a/%2e%2e/b", "%2E%2E", "a/./b", "a%2fb", "a%5Cb", "a\\b", "/evil.com/x", "https://evil.com/x",
                     "a b", "a#b", "a?b", "%00"] {
            guard case .failure(.badPath) = resolve("https://api.example.com/v1", tail) else { Issue.record("\(tail) served"); continue }
        }
        // A colon inside a segment is an ordinary path (Google's `:batch`).
        #expect((try? resolve("https://api.example.com/v1", "tokens:batch").get())?.url == "https://api.example.com/v1/tokens:batch")
    }

    @Test("http bases only where allowed")
    func httpOnlyAllowed() {
        guard case .failure(.noUpstream) = resolve("http://api.example.com", "x") else { Issue.record("http served"); return }
        #expect((try? UpstreamURL.resolve(base: "http://127.0.0.1:9", metadata: nil, tail: "x", query: nil, allowHTTP: true).get())?.origin == "http://127.0.0.1:9")
    }

    @Test("the caller's Authorization, DPoP, Host, hop-by-hop headers, those Connection names and Tokenbroker-* never go upstream")
    func requestHeaders() {
        let out = ProxyHeaders.request([("Authorization", "Bearer caller"), ("Host", "broker"), ("Connection", "close, X-Secret"),
                                        ("X-Secret", "s"), ("Keep-Alive", "5"), ("Transfer-Encoding", "chunked"), ("TE", "trailers"),
                                        ("Upgrade", "h2c"), ("Proxy-Authorization", "p"), ("DPoP", "x"), ("Tokenbroker-Subject", "alice"),
                                        ("Content-Type", "application/json"), ("Accept", "*/*"), ("Content-Length", "3")])
        #expect(out.map(\.name) == ["Content-Type", "Accept"])
    }

    @Test("the upstream's hop-by-hop headers and framing do not come back")
    func responseHeaders() {
        let out = ProxyHeaders.response([("Connection", "X-Hop"), ("X-Hop", "1"), ("Transfer-Encoding", "chunked"), ("Content-Length", "9"),
                                         ("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
        #expect(out.map(\.name) == ["Content-Type", "Set-Cookie", "Set-Cookie"])
    }

    @Test("WWW-Authenticate: invalid_token for Bearer and DPoP, use_dpop_nonce, a bare 401")
    func challenges() {
        #expect(WWWAuthenticate([#"Bearer realm="api", error="invalid_token", error_description="expired""#]).invalidToken)
        #expect(WWWAuthenticate([#"DPoP algs="ES256", error="invalid_token""#]).invalidToken)
        #expect(!WWWAuthenticate([#"Bearer error="insufficient_scope""#]).invalidToken)
        #expect(WWWAuthenticate([#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#]).useDPoPNonce)
        #expect(!WWWAuthenticate([#"Bearer error="use_dpop_nonce""#]).useDPoPNonce)
        #expect(WWWAuthenticate([#"Bearer realm="x""#]).namesNoError)
        #expect(WWWAuthenticate([]).namesNoError)
        let two = WWWAuthenticate([#"Basic realm="a", Bearer error=invalid_token"#])
        #expect(two.challenges.map(\.scheme) == ["basic", "bearer"])
        #expect(two.invalidToken)
    }

    @Test("Retry-After: delta-seconds or an HTTP-date against now, bounded; garbage is no wait")
    func retryAfter() {
        #expect(RetryAfter.seconds("2", now: now) == 2)
        #expect(RetryAfter.seconds("999999", now: now) == RetryAfter.cap)
        #expect(RetryAfter.seconds("Fri, 15 Jan 2027 08:00:10 GMT", now: Date(timeIntervalSince1970: 1_799_999_999)) != nil)
        let date = Date(timeIntervalSince1970: 784_111_777)   // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: date.addingTimeInterval(-30)) == 30)
        #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: date.addingTimeInterval(30)) == 0)
        #expect(RetryAfter.seconds("soon", now: now) == nil)
        #expect(RetryAfter.seconds("-1", now: now) == nil)
    }

    @Test("a backoff lasts until its end, per tenant, client and host; the longer wait wins")
    func backoffs() {
        let b = UpstreamBackoffs()
        let k = UpstreamBackoffs.Key(tenant: "a", client: "c", host: "api.example.com")
        b.record(k, until: now.addingTimeInterval(2), now: now)
        b.record(k, until: now.addingTimeInterval(1), now: now)
        #expect(b.remaining(k, now: now) == 2)
        #expect(b.remaining(k, now: now.addingTimeInterval(1.5)) == 1)
        #expect(b.remaining(k, now: now.addingTimeInterval(2)) == nil)
        #expect(b.remaining(UpstreamBackoffs.Key(tenant: "b", client: "c", host: "api.example.com"), now: now) == nil)
    }

    @Test("upstream settings: strict members, stored JSON reads back, the registration's over the descriptor's")
    func settings() throws {
        let s = try UpstreamSettings(json: ["base_url": "https://api.example.com/v1", "allow_private_addresses": true, "retry_rate_limited": true,
                                            "retry_budget_seconds": 5])
        #expect(try UpstreamSettings(jsonText: s.json) == s)
        #expect(throws: UpstreamSettings.Invalid.self) { try UpstreamSettings(json: ["base_uri": "https://x"]) }
        #expect(throws: UpstreamSettings.Invalid.self) { try UpstreamSettings(json: ["base_url": "ftp://x"]) }
        #expect(throws: UpstreamSettings.Invalid.self) { try UpstreamSettings(json: ["base_url": "https://x/?a=1"]) }
        #expect(throws: UpstreamSettings.Invalid.self) { try UpstreamSettings(json: ["allow_private_addresses": true], descriptor: true) }
        let d = try UpstreamSettings(json: ["base_url": "{instance_url}/services/data", "plain_401_invalid_token": true], descriptor: true)
        let e = UpstreamSettings.effective(client: UpstreamSettings(allowPrivateAddresses: true), descriptor: d)
        #expect(e?.baseURL == "{instance_url}/services/data")
        #expect(e?.plain401InvalidToken == true)
        #expect(e?.allowPrivateAddresses == true)
        #expect(UpstreamSettings.effective(client: nil, descriptor: nil) == nil)
    }
}
