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
        func current(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata { metadata }
    }

    struct NoKeys: KeySetSource {
        func keys(_ source: MetadataSource, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] { [] }
    }

    struct NoSignatures: SignatureVerifier {
        func verify(_ alg: JWSAlgorithm, key: JSONWebKey, input: [UInt8], signature: [UInt8]) -> Bool { false }
    }

    static let issuer = "https://idp.example"

    /// The login service over in-memory stores, with tenant t1 and its client `app` at `issuer`.
    final class Harness {
        let clock = ManualClock(), registry = InMemoryRegistryStore(), logins = InMemoryLoginStore(), sessions = InMemorySessionStore()
        let log = EventLog()
        let service: LoginService

        init(_ client: ClientRegistration, secret: String?, directory: any IssuerDirectory) throws {
            _ = try registry.putTenant(id: "t1", name: "T1", now: clock.now())
            _ = try registry.putClient(client, secret: secret, assertionKey: nil, now: clock.now())
            let log = self.log
            service = LoginService(
                logins: logins, sessions: sessions, registry: RegistryCache(store: registry, maxAge: 60), directory: directory,
                endpoint: ScriptedTokenEndpoint(), idTokens: JWTVerifier(keys: NoKeys(), signatures: NoSignatures()), digest: Identity(),
                feed: LocalChangeFeed(), audit: RecordingAuditSink(), clock: clock, events: { line in log.lines.withLock { $0.append(line) } })
        }
    }

    /// The service's log lines, as a test reads them.
    final class EventLog: Sendable {
        let lines = Mutex<[LogLine]>([])
    }

    @Test("a FAPI 2.0 client's callback without iss, its client unreadable for a moment: refused with that error, never let through")
    func fapiIssCheckFailsClosed() throws {
        let issuer = Self.issuer
        let h = try Harness(ClientRegistration(tenant: "t1", id: "app", issuer: issuer, clientID: "app", authMethod: .privateKeyJWT,
                                               redirectURI: "https://b/cb", scopes: ["openid"], profile: .fapi2),
                            secret: nil, directory: OneIssuer(metadata: Self.document(issuer, iss: false)))
        let (clock, registry, logins, sessions, service) = (h.clock, h.registry, h.logins, h.sessions, h.service)
        try logins.insert(PendingLogin(id: "login-1", tenant: "t1", client: "app", issuer: issuer, stateHash: Array("state-1".utf8),
                                       verifier: "verifier", nonce: "nonce", scopes: ["openid"], redirectAfter: nil, createdAt: clock.now(),
                                       expiresAt: clock.now().addingTimeInterval(600)))
        // One read fails: had the check been skipped, the next read would have found the client and the code gone to the IdP.
        registry.failClientReads(1, with: .storeUnavailable)
        #expect(throws: BrokerError.storeUnavailable) {
            _ = try service.complete(LoginService.Callback(state: "state-1", code: "code-1", iss: nil, error: nil))
        }
        #expect(h.log.lines.withLock { $0.map(\.event.code) } == ["store_unavailable"])
        #expect(try sessions.sessions(tenant: "t1", matching: SessionQuery(limit: 10)).sessions.isEmpty)
    }

    static func document(_ issuer: String, iss: Bool) -> IssuerMetadata {
        IssuerMetadata(issuer: issuer, tokenEndpoint: URL(string: issuer + "/token")!, authorizationEndpoint: nil, jwksURI: nil,
                       revocationEndpoint: nil, endSessionEndpoint: nil, issParameterSupported: iss)
    }

    @Test("callbacks without iss: refused while the IdP advertises RFC 9207, each one asking it; the first one after it stopped, seconds after a refusal, goes on to the code exchange")
    func missingIssFollowsTheIdPAtOnce() throws {
        let issuer = Self.issuer
        let directory = InMemoryIssuerDirectory(published: Self.document(issuer, iss: true))
        let h = try Harness(ClientRegistration(tenant: "t1", id: "app", issuer: issuer, clientID: "app", authMethod: .clientSecretBasic,
                                               redirectURI: "https://b/cb", scopes: ["openid"]),
                            secret: "s", directory: directory)
        let (clock, logins, service) = (h.clock, h.logins, h.service)
        func callback(_ n: Int) -> String {
            let state = "state-\(n)"
            try? logins.insert(PendingLogin(id: "login-\(n)", tenant: "t1", client: "app", issuer: issuer, stateHash: Array(state.utf8),
                                            verifier: "verifier", nonce: "nonce", scopes: ["openid"], redirectAfter: nil, createdAt: clock.now(),
                                            expiresAt: clock.now().addingTimeInterval(600)))
            do {
                _ = try service.complete(LoginService.Callback(state: state, code: "code-\(n)", iss: nil, error: nil))
                return "signed in"
            } catch let e as BrokerError { return e.code } catch { return "\(error)" }
        }
        _ = try directory.metadata(issuer: issuer, trustAnchors: nil, now: clock.now())   // cached when the login started
        #expect(callback(1) == "issuer_mismatch")
        clock.advance(by: 1)
        #expect(callback(2) == "issuer_mismatch")
        #expect(directory.reads == 3, "each refusal asked the IdP, neither was answered from the cache")
        directory.publish(Self.document(issuer, iss: false))
        clock.advance(by: 1)
        // Past the iss check: the fake endpoint exchanges no codes, so the refusal is the exchange's.
        #expect(callback(3) != "issuer_mismatch")
        #expect(callback(4) != "issuer_mismatch")
        #expect(directory.reads == 4, "the document read for the third callback answers the fourth from the cache")
    }
}
