import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

@Suite("App tokens: one grant for concurrent asks, refusals, disabled clients, renewal while in use, audit")
struct AppTokenServiceTests {
    let clock = ManualClock()
    let registry = InMemoryRegistryStore()
    let store = InMemoryAppTokenStore()
    let audit = RecordingAuditSink()

    func service(_ endpoint: ScriptedTokenEndpoint) throws -> AppTokenService {
        _ = try registry.putTenant(id: "t1", name: "T1", now: clock.now())
        _ = try registry.putClient(ClientRegistration(tenant: "t1", id: "app", issuer: "https://idp.example", clientID: "app",
                                                      authMethod: .clientSecretBasic, redirectURI: "https://b/cb", scopes: ["openid"]),
                                   secret: "s", assertionKey: nil, now: clock.now())
        return AppTokenService(store: store, registry: RegistryCache(store: registry, maxAge: 0), endpoint: endpoint, dpopKeys: nil, audit: audit,
                               clock: clock)
    }

    @Test("50 concurrent asks make one grant; later asks are served the stored token")
    func oneGrant() throws {
        let endpoint = ScriptedTokenEndpoint(gated: true)
        let s = try service(endpoint)
        let ask = AppTokenAsk(scopes: ["read"])
        let got = Mutex50()
        let group = DispatchGroup()
        for _ in 0..<50 {
            group.enter()
            Thread {
                got.add(try? s.token(tenant: "t1", client: "app", ask: ask, minTTL: 60))
                group.leave()
            }.start()
        }
        Thread.sleep(forTimeInterval: 0.3)   // every caller waits behind the one grant
        endpoint.open(50)
        group.wait()
        #expect(endpoint.spentTokens == ["client_credentials"])
        #expect(got.tokens.count == 50 && Set(got.tokens.map(\.accessToken)) == ["at-1"])
        let again = try s.token(tenant: "t1", client: "app", ask: ask, minTTL: 60)
        #expect(again.accessToken == "at-1" && !again.granted && endpoint.spentTokens.count == 1)
    }

    @Test("a forced renewal at the refused version grants once; at an older version it gets the stored token")
    func forcedRenewal() throws {
        let endpoint = ScriptedTokenEndpoint()
        let s = try service(endpoint)
        let ask = AppTokenAsk()
        let first = try s.token(tenant: "t1", client: "app", ask: ask, minTTL: nil)
        let renewed = try s.renew(tenant: "t1", client: "app", ask: ask, ifStill: first.version)
        #expect(renewed.accessToken == "at-2" && renewed.version == first.version + 1)
        let late = try s.renew(tenant: "t1", client: "app", ask: ask, ifStill: first.version)
        #expect(late.accessToken == "at-2" && endpoint.spentTokens.count == 2)
    }

    @Test("min_ttl past the token's lifetime: 422 saying the most it can get")
    func minTTLTooLong() throws {
        let s = try service(ScriptedTokenEndpoint(answer: ScriptedTokenEndpoint.rotating(lifetime: 30)))
        #expect(throws: BrokerError.minTTLTooLong(maximum: 29)) { try s.token(tenant: "t1", client: "app", ask: AppTokenAsk(), minTTL: 40) }
    }

    @Test("an IdP that refuses the client drops its stored token; a disabled or unknown client gets none")
    func refusals() throws {
        let refuse = Refuse()
        let endpoint = ScriptedTokenEndpoint { _, n throws(TokenEndpointError) in
            if refuse.on { throw .oauth(OAuthError(error: "invalid_client", description: nil, status: 401)) }
            return TokenGrant(accessToken: "at-\(n)", tokenType: .bearer, expiresIn: 3600, refreshToken: nil, scope: nil, idToken: nil)
        }
        let s = try service(endpoint)
        let ask = AppTokenAsk()
        let held = try s.token(tenant: "t1", client: "app", ask: ask, minTTL: 60)
        refuse.on = true
        #expect(throws: BrokerError.idpRejectedClient) { try s.renew(tenant: "t1", client: "app", ask: ask, ifStill: held.version) }
        #expect(try store.appToken(tenant: "t1", client: "app", ask: ask)?.accessToken == nil, "the refused client's token is still stored")
        #expect(throws: BrokerError.idpRejectedClient) { try s.token(tenant: "t1", client: "app", ask: ask, minTTL: 60) }
        refuse.on = false
        _ = try s.token(tenant: "t1", client: "app", ask: ask, minTTL: 60)
        var reg = try #require(try registry.client(tenant: "t1", id: "app"))
        reg.disabled = true
        _ = try registry.putClient(reg, secret: nil, assertionKey: nil, now: clock.now())
        #expect(throws: BrokerError.conflict(code: "client_disabled", message: "the client is disabled: it gets no app token")) {
            try s.token(tenant: "t1", client: "app", ask: ask, minTTL: 60)
        }
        #expect(throws: BrokerError.notFound("client")) { try s.token(tenant: "t1", client: "nobody", ask: ask, minTTL: 60) }
    }
}

extension AppTokenServiceTests {
    @Test("a token handed out after its grant is renewed once past its renewal instant, before expiry; by one of two replicas")
    func renewsTokensInUse() throws {
        let endpoint = ScriptedTokenEndpoint(answer: ScriptedTokenEndpoint.rotating(lifetime: 100))
        let s = try service(endpoint)
        let other = AppTokenService(store: store, registry: RegistryCache(store: registry, maxAge: 0), endpoint: endpoint, dpopKeys: nil,
                                    audit: audit, clock: clock)
        let ask = AppTokenAsk(scopes: ["read"])
        let first = try s.token(tenant: "t1", client: "app", ask: ask, minTTL: nil)
        clock.advance(by: 10)
        #expect(try !s.token(tenant: "t1", client: "app", ask: ask, minTTL: nil).granted)
        try s.flushUses()
        // The lead of a 100-s token is 20 s: not due at 70 s, due within a pass of 80 s.
        clock.advance(by: 60)
        #expect(try s.renewDue(ahead: 1) == 0 && endpoint.spentTokens.count == 1)
        clock.advance(by: 9.5)
        #expect(try s.renewDue(ahead: 1) == 1 && endpoint.spentTokens.count == 2)
        #expect(try other.renewDue(ahead: 1) == 0, "the other replica renewed the renewed token again")
        let next = try s.token(tenant: "t1", client: "app", ask: ask, minTTL: nil)
        #expect(!next.granted && next.accessToken != first.accessToken && next.version == first.version + 1)
        #expect(s.renewals.counts["renewed"] == 1 && s.handOuts.counts == ["granted": 1, "stored": 2] && s.grants.counts == ["granted": 2])
    }

    @Test("without min_ttl, a first grant of short-lived tokens is handed out: the default min_ttl follows their lifetime")
    func defaultMinTTLOfAFirstGrant() throws {
        let s = try service(ScriptedTokenEndpoint(answer: ScriptedTokenEndpoint.rotating(lifetime: 10)))
        let t = try s.token(tenant: "t1", client: "app", ask: AppTokenAsk(), minTTL: nil)
        #expect(t.granted && t.expiresIn == 10)
        #expect(try s.renew(tenant: "t1", client: "app", ask: AppTokenAsk(), ifStill: t.version).version == t.version + 1)
    }

    @Test("a token not handed out since its grant is not renewed: it expires")
    func leavesUnusedTokens() throws {
        let endpoint = ScriptedTokenEndpoint(answer: ScriptedTokenEndpoint.rotating(lifetime: 100))
        let s = try service(endpoint)
        _ = try s.token(tenant: "t1", client: "app", ask: AppTokenAsk(), minTTL: nil)   // its own grant: not a use
        try s.flushUses()
        for _ in 0..<12 {
            clock.advance(by: 10)
            try s.renewDue(ahead: 1)
        }
        #expect(endpoint.spentTokens.count == 1)
    }

    @Test("hand-outs, refusals and grants are audited with the asker and the client")
    func audited() throws {
        let s = try service(ScriptedTokenEndpoint())
        _ = try s.token(tenant: "t1", client: "app", ask: AppTokenAsk(), minTTL: 60, actor: "key:k1")
        _ = try s.token(tenant: "t1", client: "app", ask: AppTokenAsk(), minTTL: 60, actor: "key:k1")
        _ = try? s.token(tenant: "t1", client: "nobody", ask: AppTokenAsk(), minTTL: 60, actor: "key:k1")
        let events = audit.recorded.map { "\($0.actor) \($0.action.rawValue) \($0.client ?? "-") \($0.outcome)" }
        #expect(events == ["key:k1 app_token.grant app granted", "key:k1 app_token.issue app granted", "key:k1 app_token.issue app stored",
                           "key:k1 app_token.issue nobody not_found"])
        #expect(audit.recorded.allSatisfy { $0.tenant == "t1" && $0.session == nil })
    }
}

private final class Refuse: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var on: Bool {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

private final class Mutex50: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var tokens: [IssuedAppToken] = []
    func add(_ t: IssuedAppToken?) { lock.withLock { if let t { tokens.append(t) } } }
}
