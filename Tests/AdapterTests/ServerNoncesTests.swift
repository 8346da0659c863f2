import BrokerCore
import BrokerOIDC
import BrokerTesting
import Foundation
import Testing

/// One DPoP nonce per client at its authorization server, known to every replica: two
/// ServerNonces over one store and one change feed stand for two replicas.
@Suite("Server nonces: one per client, shared by endpoints and replicas")
struct ServerNoncesTests {
    static func client(_ tenant: String = "t1", _ id: String = "app", issuer: String = "https://idp.example") -> ClientRegistration {
        ClientRegistration(tenant: tenant, id: id, issuer: issuer, clientID: id, authMethod: .clientSecretBasic, redirectURI: "https://b/cb",
                           scopes: ["openid"])
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a nonce learned from one endpoint on one replica is the next proof's nonce at every endpoint, on the other replica too")
    func sharedByReplicas() {
        let store = InMemoryDPoPNonceStore(), feed = LocalChangeFeed()
        let a = ServerNonces(store: store, feed: feed), b = ServerNonces(store: store, feed: feed)
        feed.subscribe { a.forget($0) }
        feed.subscribe { b.forget($0) }
        let c = Self.client()
        #expect(b.current(for: c) == nil)                       // b read the store on first use: none yet
        a.learn("n1", from: .token, client: c, now: Self.now)
        #expect(b.current(for: c)?.value == "n1" && b.current(for: c)?.learnedFrom == .token)
        b.learn("n2", from: .pushedAuthorizationRequest, client: c, now: Self.now)
        #expect(a.current(for: c)?.value == "n2" && a.current(for: c)?.learnedFrom == .pushedAuthorizationRequest)
        #expect(a.current(for: Self.client("t2")) == nil && a.current(for: Self.client("t1", "other")) == nil, "another tenant or client has its own")
    }

    @Test("learning the nonce already held writes and announces nothing")
    func sameNonceIsQuiet() {
        let store = InMemoryDPoPNonceStore(), feed = LocalChangeFeed()
        let a = ServerNonces(store: store, feed: feed), c = Self.client()
        a.learn("n1", from: .token, client: c, now: Self.now)
        a.learn("n1", from: .pushedAuthorizationRequest, client: c, now: Self.now)
        #expect(feed.published.withLock { $0 } == [.dpopNonce(tenant: "t1", client: "app")])
        #expect(a.current(for: c)?.learnedFrom == .token)
    }

    @Test("a client moved to another issuer starts without a nonce")
    func issuerChange() {
        let a = ServerNonces(store: InMemoryDPoPNonceStore())
        a.learn("n1", from: .token, client: Self.client(), now: Self.now)
        #expect(a.current(for: Self.client(issuer: "https://other.example")) == nil)
    }
}
