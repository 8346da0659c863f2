import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// OperatorService on in-memory stores: the rules of registration and of API keys, with no
/// process and no socket.
@Suite("Operator service")
struct OperatorServiceTests {
    /// An IdP directory whose discovery answers, or fails with, what the test says.
    struct Directory: IssuerDirectory {
        let failure: TokenEndpointError?
        var advertised: @Sendable (IssuerMetadata) -> IssuerMetadata = { $0 }
        /// The trust anchors each registration's discovery read was made with.
        var readWith: ReadLog?
        func metadata(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
            let issuer = source.issuer
            if let failure { throw failure }
            return advertised(IssuerMetadata(issuer: issuer, tokenEndpoint: URL(string: issuer + "/token")!, authorizationEndpoint: nil, jwksURI: nil,
                                             revocationEndpoint: nil, endSessionEndpoint: nil, issParameterSupported: true))
        }
        func current(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
            try metadata(source, trustAnchors: trustAnchors, now: now)
        }
        func verify(_ source: MetadataSource, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata {
            readWith?.anchors.withLock { $0.append(trustAnchors) }
            return try metadata(source, trustAnchors: trustAnchors, now: Date())
        }
        func reread(_ source: MetadataSource, trustAnchors: String?, now: Date) -> Bool { false }
    }

    /// Keys are opaque bytes here: signing is the OpenSSL adapter's, tested with it.
    struct Keys: PrivateKeys {
        func generate(_ alg: JWSAlgorithm) -> [UInt8] { Array(UUID().uuidString.utf8) }
        func publicKey(der: [UInt8], alg: JWSAlgorithm) -> JSONWebKey? { JSONWebKey(kty: "EC", kid: "") }
        func jws(der: [UInt8], alg: JWSAlgorithm, claims: [String: Any], kid: String, type: String) -> String? { "jws" }
        func signer(der: [UInt8], alg: JWSAlgorithm) -> (any JWSSigner)? { nil }
    }

    final class ReadLog: Sendable { let anchors = Mutex<[String?]>([]) }

    /// Anchors judged by their shape only: the certificates themselves are the OpenSSL adapter's.
    struct Anchors: TrustAnchorCheck {
        func problem(pem: String, now: Date) -> String? { TrustAnchorRules.shapeProblem(pem) }
    }

    struct Hash: Digest {
        func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(bytes.prefix(32)) }
    }

    let clock = ManualClock()
    let store = InMemoryRegistryStore()
    let feed = LocalChangeFeed()

    func service(discovery failure: TokenEndpointError? = nil, readWith: ReadLog? = nil,
                 advertised: @escaping @Sendable (IssuerMetadata) -> IssuerMetadata = { $0 }) throws -> OperatorService {
        _ = try store.putTenant(id: "t1", name: "T1", now: clock.now())
        _ = try store.putTenant(id: "t2", name: "T2", now: clock.now())
        let registry = RegistryCache(store: store, maxAge: 0)
        return OperatorService(store: store, hasher: PlainSecretHasher(), feed: feed, audit: RecordingAuditSink(), clock: clock,
                               assertionKeys: AssertionKeys(registry: registry, digest: Hash(), keys: Keys()),
                               directory: Directory(failure: failure, advertised: advertised, readWith: readWith), anchors: Anchors(),
                               auth: Authenticator(store: store, hasher: PlainSecretHasher(), maxAge: 60))
    }

    func client(_ issuer: String) -> ClientRegistration {
        ClientRegistration(tenant: "t1", id: "app", issuer: issuer, clientID: "app", authMethod: .clientSecretBasic,
                           redirectURI: "https://b.example/cb", scopes: ["openid"])
    }

    @Test("an issuer with a query, or whose discovery cannot be read, is refused before anything is stored; verify false skips the read")
    func issuerChecks() throws {
        let ops = try service(discovery: .transient(reason: "discovery: Couldn't connect to server", retryAfter: nil))
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "issuer must not have a query (OpenID Connect Discovery 1.0 §2)")) {
            try ops.putClient(client("https://idp.example?tenant=x"), secret: "s", verify: false, actor: "op")
        }
        do {
            _ = try ops.putClient(client("https://idp.example"), secret: "s", actor: "op")
            Issue.record("an unreadable issuer was registered")
        } catch let BrokerError.badRequest(code, message) {
            #expect(code == "invalid_issuer" && message.contains("https://idp.example") && message.contains("Couldn't connect"))
        }
        #expect(try store.client(tenant: "t1", id: "app") == nil)
        #expect(try ops.putClient(client("https://idp.example"), secret: "s", verify: false, actor: "op").created)
    }

    @Test("trust anchors: refused with what is wrong before the issuer is read and nothing stored; good ones are what the issuer is read with")
    func trustAnchors() throws {
        let log = ReadLog()
        let ops = try service(readWith: log)
        var c = client("https://idp.example")
        let kept = try ops.putClient(c, secret: "s", actor: "op")
        #expect(kept.created && kept.0.client.trustAnchors == nil)
        c.trustAnchors = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n"
        #expect(throws: BrokerError.badRequest(code: "invalid_trust_anchors",
                                               message: "trust_anchors: block 1 is not a certificate (it is labelled PRIVATE KEY)")) {
            try ops.putClient(c, secret: "s", actor: "op")
        }
        c.trustAnchors = ""
        #expect(throws: BrokerError.self) { try ops.putClient(c, secret: "s", verify: false, actor: "op") }
        #expect(try store.client(tenant: "t1", id: "app")?.trustAnchors == nil)
        #expect(log.anchors.withLock { $0 } == [nil], "a refused bundle was used to read the issuer")
        let pem = "-----BEGIN CERTIFICATE-----\nQUFB\n-----END CERTIFICATE-----\n"
        c.trustAnchors = pem
        _ = try ops.putClient(c, secret: nil, actor: "op")
        #expect(log.anchors.withLock { $0 } == [nil, pem])
        #expect(try store.client(tenant: "t1", id: "app")?.trustAnchors == pem)
        #expect(try ops.clientView(tenant: "t1", id: "app").client.trustAnchors == pem)
    }

    @Test("a client the issuer cannot serve as the broker would use it is refused at registration with each reason; what is not advertised is not held against it")
    func unservableClients() throws {
        func refused(_ c: ClientRegistration, _ change: @escaping @Sendable (inout IssuerMetadata) -> Void) throws -> String? {
            let ops = try service { var m = $0; change(&m); return m }
            do { _ = try ops.putClient(c, secret: "s", actor: "op"); return nil } catch let e as BrokerError {
                guard case .badRequest(code: "unservable_client", let message) = e else { return "\(e)" }
                return message
            }
        }
        let c = client("https://idp.example")
        #expect(try refused(c) { $0.idTokenSigningAlgorithms = ["EdDSA", "HS256"] }?.contains("signs ID tokens only with EdDSA, HS256") == true)
        #expect(try refused(c) { $0.tokenEndpointAuthMethods = ["private_key_jwt", "tls_client_auth"] }?.contains("does not accept auth_method client_secret_basic") == true)
        var jwt = c
        jwt.authMethod = .privateKeyJWT
        #expect(try refused(jwt) { $0.tokenEndpointAuthSigningAlgorithms = ["PS256"] }?.contains("ES256 client assertions") == true)
        let par = IssuerMetadata(issuer: "https://idp.example", tokenEndpoint: URL(string: "https://idp.example/token")!, authorizationEndpoint: nil,
                                 jwksURI: nil, revocationEndpoint: nil, endSessionEndpoint: nil, issParameterSupported: true,
                                 requirePushedAuthorizationRequests: true)
        #expect(try refused(c) { $0 = par }?.contains("requires pushed authorization requests") == true)
        // Advertised and servable, or not advertised at all: registered.
        #expect(try refused(c) { $0.idTokenSigningAlgorithms = ["RS256", "EdDSA"]; $0.tokenEndpointAuthMethods = ["client_secret_basic"] } == nil)
        #expect(try refused(c) { _ in } == nil)
        var dpop = c
        dpop.dpopAlgorithm = .ps256
        #expect(try refused(dpop) { $0.dpopSigningAlgorithms = ["ES256"] }?.contains("does not accept PS256 DPoP proofs") == true)
        #expect(try refused(dpop) { $0.dpopSigningAlgorithms = ["ES256", "PS256"] } == nil)
    }

    @Test("dpop \"auto\" binds sessions only where the issuer advertises the algorithm, and never without reading the metadata")
    func dpopAuto() throws {
        var c = client("https://idp.example")
        c.dpopAlgorithm = .es256
        let advertising = try service { var m = $0; m.dpopSigningAlgorithms = ["ES256"]; return m }
        #expect(try advertising.putClient(c, secret: "s", dpopAuto: true, actor: "op").0.client.dpopAlgorithm == .es256)
        let silent = try service()
        #expect(try silent.putClient(c, secret: "s", dpopAuto: true, actor: "op").0.client.dpopAlgorithm == nil)
        #expect(try silent.putClient(c, secret: "s", verify: false, dpopAuto: true, actor: "op").0.client.dpopAlgorithm == nil)
        #expect(try silent.putClient(c, secret: "s", verify: false, actor: "op").0.client.dpopAlgorithm == .es256, "an explicit dpop is kept")
        #expect(try store.client(tenant: "t1", id: "app")?.dpopAlgorithm == .es256)
    }

    @Test("keys: expiry bounds, rotation within the caller's tenants and overlap bounds, certificate principals have no key and do not rotate")
    func keys() throws {
        let ops = try service()
        #expect(throws: BrokerError.self) { try ops.createKey(name: "k", roles: [.worker], tenants: ["t1"], expiresIn: 0, actor: "op") }
        let (p, key) = try ops.createKey(name: "k", roles: [.worker], tenants: ["t2"], actor: "op")
        #expect(key?.hasPrefix("tbk_\(p.id)_") == true)
        let limited = Principal(id: "op1", name: "op", roles: [.operator], tenants: ["t1"])
        #expect(throws: BrokerError.notFound("api key")) { try ops.rotateKey(id: p.id, overlap: 60, actor: limited) }
        #expect(throws: BrokerError.self) { try ops.rotateKey(id: p.id, overlap: 8 * 86_400, actor: nil) }
        let (_, fresh, until) = try ops.rotateKey(id: p.id, overlap: 60, actor: nil)
        #expect(fresh != key && until == clock.now().addingTimeInterval(60))
        #expect(try store.apiKey(id: p.id)?.previous?.until == until)
        #expect(throws: BrokerError.self) { try ops.rotateKey(id: p.id, overlap: 60, actor: nil) }   // the first overlap still runs
        let (_, cut, _) = try ops.rotateKey(id: p.id, overlap: 0, actor: nil)                        // 0: cut it now
        #expect(cut != fresh)

        let (c, none) = try ops.createKey(name: "cert", roles: [.worker], tenants: ["t1"],
                                          certificateSHA256: String(repeating: "AB:", count: 31) + "AB", actor: "op")
        #expect(none == nil && c.certificateSHA256 == String(repeating: "ab", count: 32))
        #expect(throws: BrokerError.self) { try ops.rotateKey(id: c.id, overlap: 60, actor: nil) }
        #expect(throws: BrokerError.self) {
            try ops.createKey(name: "bad", roles: [.worker], tenants: ["t1"], certificateSHA256: "not-hex", actor: "op")
        }
        try ops.revokeKey(id: p.id, actor: nil)
        #expect(throws: BrokerError.self) { try ops.rotateKey(id: p.id, overlap: 60, actor: nil) }
    }
}
