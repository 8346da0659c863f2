import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

@Suite("App tokens: one grant for concurrent asks, refusals, disabled clients")
struct AppTokenServiceTests {
    let clock = ManualClock()
    let registry = InMemoryRegistryStore()
    let store = InMemoryAppTokenStore()

    func service(_ endpoint: ScriptedTokenEndpoint) throws -> AppTokenService {
        _ = try registry.putTenant(id: "t1", name: "T1", now: clock.now())
        _ = try registry.putClient(ClientRegistration(tenant: "t1", id: "app", issuer: "https://idp.example", clientID: "app",
                                                      authMethod: .clientSecretBasic, redirectURI: "https://b/cb", scopes: ["openid"]),
                                   secret: "s", assertionKey: nil, now: clock.now())
        return AppTokenService(store: store, registry: RegistryCache(store: registry, maxAge: 0), endpoint: endpoint, dpopKeys: nil, clock: clock)
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
