import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// The callback's checks over in-memory fakes; the whole flow is tested against the development IdP.
@Suite("A login's callback")
struct LoginCallbackTests {
    /// The state's hash is the state itself: the test stores the login under it.
    struct Identity: Digest { func sha256(_ bytes: [UInt8]) -> [UInt8] { bytes } }

    struct OneIssuer: IssuerDirectory {
        let metadata: IssuerMetadata
        func metadata(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata { metadata }
        func verify(_ source: MetadataSource, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata { metadata }
        func reread(_ source: MetadataSource, trustAnchors: String?, now: Date) -> Bool { false }
    }

    struct NoKeys: KeySetSource {
        func keys(_ source: MetadataSource, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] { [] }
    }

    struct NoSignatures: SignatureVerifier {
        func verify(_ alg: JWSAlgorithm, key: JSONWebKey, input: [UInt8], signature: [UInt8]) -> Bool { false }
    }

    @Test("a FAPI 2.0 client's callback without iss, its client unreadable for a moment: refused with that error, never let through")
    func fapiIssCheckFailsClosed() throws {
        let clock = ManualClock(), registry = InMemoryRegistryStore(), logins = InMemoryLoginStore(), sessions = InMemorySessionStore()
        let issuer = "https://idp.example"
        _ = try registry.putTenant(id: "t1", name: "T1", now: clock.now())
        _ = try registry.putClient(ClientRegistration(tenant: "t1", id: "app", issuer: issuer, clientID: "app", authMethod: .privateKeyJWT,
                                                      redirectURI: "https://b/cb", scopes: ["openid"], profile: .fapi2),
                                   secret: nil, assertionKey: nil, now: clock.now())
        let lines = Mutex<[LogLine]>([])
        let service = LoginService(
            logins: logins, sessions: sessions, registry: RegistryCache(store: registry, maxAge: 60),
            directory: OneIssuer(metadata: IssuerMetadata(issuer: issuer, tokenEndpoint: URL(string: issuer + "/token")!, authorizationEndpoint: nil,
                                                          jwksURI: nil, revocationEndpoint: nil, endSessionEndpoint: nil, issParameterSupported: false)),
            endpoint: ScriptedTokenEndpoint(), idTokens: JWTVerifier(keys: NoKeys(), signatures: NoSignatures()), digest: Identity(),
            feed: LocalChangeFeed(), audit: RecordingAuditSink(), clock: clock, events: { line in lines.withLock { $0.append(line) } })
        try logins.insert(PendingLogin(id: "login-1", tenant: "t1", client: "app", issuer: issuer, stateHash: Array("state-1".utf8),
                                       verifier: "verifier", nonce: "nonce", scopes: ["openid"], redirectAfter: nil, createdAt: clock.now(),
                                       expiresAt: clock.now().addingTimeInterval(600)))
        // One read fails: had the check been skipped, the next read would have found the client and the code gone to the IdP.
        registry.failClientReads(1, with: .storeUnavailable)
        #expect(throws: BrokerError.storeUnavailable) {
            _ = try service.complete(LoginService.Callback(state: "state-1", code: "code-1", iss: nil, error: nil))
        }
        #expect(lines.withLock { $0.map(\.event.code) } == ["store_unavailable"])
        #expect(try sessions.sessions(tenant: "t1", matching: SessionQuery(limit: 10)).sessions.isEmpty)
    }
}
