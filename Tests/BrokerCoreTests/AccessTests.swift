import BrokerCore
import Foundation
import Testing

@Suite("Principals, ids and rules")
struct AccessTests {
    @Test("a key reaches only its own tenants, and an outside tenant looks absent")
    func tenantScope() {
        let p = Principal(id: "k", name: "n", roles: [.worker], tenants: ["a"])
        #expect(p.authorize(.worker, tenant: "a") == nil)
        #expect(p.authorize(.worker, tenant: "b") == .notFound("tenant"))
        #expect(p.authorize(.admin, tenant: "a")?.code == "forbidden")
    }

    @Test("a proxy-only key is refused (403) where a worker role is required: it never receives a token")
    func proxyOnly() {
        let p = Principal(id: "k", name: "n", roles: [.proxy], tenants: ["a"])
        #expect(p.authorize(.proxy, tenant: "a") == nil)
        #expect(p.authorize(.worker, tenant: "a")?.code == "forbidden")
        #expect(Principal(id: "k", name: "n", roles: [.worker], tenants: ["a"]).authorize(.proxy, tenant: "a")?.code == "forbidden")
    }

    @Test("global operator routes need an all-tenant operator key")
    func globalOperator() {
        #expect(Principal(id: "k", name: "n", roles: [.operator], tenants: ["a"]).authorize(.operator, tenant: nil)?.code == "forbidden")
        #expect(Principal(id: "k", name: "n", roles: [.operator], tenants: ["*"]).authorize(.operator, tenant: nil) == nil)
    }

    @Test("lock keys are stable and differ by tenant")
    func lockKeys() {
        #expect(LockKey.session(tenant: "a", id: "s") == LockKey.session(tenant: "a", id: "s"))
        #expect(LockKey.session(tenant: "a", id: "s") != LockKey.session(tenant: "b", id: "s"))
        #expect(LockKey.session(tenant: "ab", id: "c") != LockKey.session(tenant: "a", id: "bc"))
        // Pinned: replicas of two releases running side by side (a rolling upgrade) must take the
        // same lock for the same session, or a refresh token could be presented by both.
        #expect(LockKey.session(tenant: "a", id: "s") == 528_852_102_258_540_863)
        #expect(LockKey.appToken(tenant: "a", client: "c", ask: "k") == 217_434_501_386_298_611)
    }

    @Test("session ids carry 256 random bits")
    func sessionIDs() {
        var rng = SystemRandomNumberGenerator()
        let a = Identifiers.session(using: &rng), b = Identifiers.session(using: &rng)
        #expect(a != b && a.hasPrefix("ses_") && a.count == 4 + 43)
    }

    @Test("slugs, scopes and configuration URLs are checked")
    func rules() {
        #expect(Slug.isValid("acme-1") && !Slug.isValid("Acme") && !Slug.isValid("-a") && !Slug.isValid(""))
        #expect(Scopes.parse("openid  read openid") == ["openid", "read"])
        #expect(URLRules.problem("https://idp.example", what: "issuer") == nil)
        #expect(URLRules.problem("http://127.0.0.1:9000", what: "issuer") == nil)
        #expect(URLRules.problem("http://idp.example", what: "issuer") != nil)
        #expect(URLRules.problem("https://u:p@idp.example", what: "issuer") != nil)
    }
}
