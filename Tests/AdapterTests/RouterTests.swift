import BrokerHTTP
import Testing

@Suite("Router: exact matches of method and path")
struct RouterTests {
    let router: Router = {
        var r = Router()
        for (method, pattern) in [("GET", "/healthz"), ("POST", "/v1/tenants/{t}/sessions/{id}/token"),
                                  ("POST", "/v1/tenants/{t}/sessions/{id}/revoke"), ("GET", "/v1/tenants/{t}/sessions/{id}"),
                                  ("DELETE", "/v1/tenants/{t}/sessions/{id}"), ("POST", "/v1/tenants/{t}/tokens:batch"),
                                  ("GET", "/v1/tenants/{t}/sessions")] {
            r.add(method, pattern) { _ in .now(.json(200, "{}")) }
        }
        return r
    }()

    func found(_ method: String, _ path: String) -> (pattern: String, params: RouteParameters)? {
        guard case .found(_, let params, let index) = router.match(method: method, path: path) else { return nil }
        return (router.table[index].pattern, params)
    }

    @Test("routes under one prefix are told apart by their last segment; captures are whole segments")
    func captures() {
        #expect(found("POST", "/v1/tenants/acme/sessions/ses_1/token")?.pattern == "/v1/tenants/{t}/sessions/{id}/token")
        #expect(found("POST", "/v1/tenants/acme/sessions/ses_1/revoke")?.params == ["t": "acme", "id": "ses_1"])
        #expect(found("GET", "/v1/tenants/acme/sessions/ses_1")?.params == ["t": "acme", "id": "ses_1"])
        #expect(found("POST", "/v1/tenants/acme/tokens:batch")?.params == ["t": "acme"])
        #expect(found("GET", "/v1/tenants/acme/sessions")?.pattern == "/v1/tenants/{t}/sessions")
        #expect(found("GET", "/healthz")?.params == [:])
    }

    @Test("a known path with another method is 405 naming the methods it takes")
    func methodNotAllowed() {
        guard case .methodNotAllowed(let allowed) = router.match(method: "PUT", path: "/v1/tenants/a/sessions/b") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allowed) == ["GET", "DELETE"])
    }

    @Test("no prefixes, no trailing or doubled slashes, no extra segments, nothing without a leading slash")
    func exactOnly() {
        for path in ["/", "", "healthz", "/healthz/", "/healthzz", "/health", "/v1/tenants/a/sessions/b/token/x",
                     "/v1/tenants//sessions/b/token", "/v1/tenants/a/sessions/b/toke", "/v1/tenants/a/sessions/b/tokens",
                     "/v1/tenants/a/sessions/b/c/d/e/f/g/h/i", "/v1/tenants/a/tokens:batc", "//healthz"] {
            if case .found = router.match(method: "GET", path: path) { Issue.record("\(path) found") }
            if case .found = router.match(method: "POST", path: path) { Issue.record("\(path) found") }
        }
        #expect(found("GET", "/v1/tenants/a/sessions/b/token") == nil)   // the path exists for POST only
    }
}
