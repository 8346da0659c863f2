import Broker
import Synchronization
import BrokerCore
import BrokerTesting
import Testing

@Suite("SessionStore contract: in memory")
struct InMemoryStoreContractTests {
    @Test("in-memory store honours the contract", arguments: SessionStoreContract.Case.allCases)
    func contract(_ c: SessionStoreContract.Case) throws {
        try c.run(InMemorySessionStore(), tenants: ("t1", "t2"))
    }
}

@Suite("Every store port's contract: in memory")
struct InMemoryPortContractTests {
    @Test("registry", arguments: RegistryStoreContract.allCases)
    func registry(_ c: RegistryStoreContract) throws { try c.run(InMemoryRegistryStore()) }

    @Test("pending logins", arguments: LoginStoreContract.allCases)
    func logins(_ c: LoginStoreContract) throws { try c.run(InMemoryLoginStore(), tenants: ("t1", "t2")) }

    @Test("revocation and its outbox", arguments: RevocationStoreContract.allCases)
    func revocation(_ c: RevocationStoreContract) throws { try c.run(InMemorySessionStore(), tenants: ("t1", "t2")) }

    @Test("DPoP nonces", arguments: DPoPNonceStoreContract.allCases)
    func dpopNonces(_ c: DPoPNonceStoreContract) throws { try c.run(InMemoryDPoPNonceStore(), tenants: ("t1", "t2")) }

    @Test("sign-out jobs", arguments: SignoutStoreContract.allCases)
    func signouts(_ c: SignoutStoreContract) throws {
        let sessions = InMemorySessionStore()
        try c.run(InMemorySignoutStore(sessions: sessions), sessions: sessions, tenants: ("t1", "t2"))
    }

    @Test("change feed: one replica, two tenants")
    func changeFeed() throws {
        let feed = LocalChangeFeed()
        try ChangeFeedContract.run(feed, replica: feed, tenants: ("t1", "t2"))
    }

    @Test("session listing")
    func catalog() throws {
        let sessions = InMemorySessionStore()
        try SessionCatalogContract.run(sessions, sessions: sessions, tenants: ("t1", "t2"))
    }

    @Test("audit trail")
    func audit() throws {
        let sink = RecordingAuditSink()
        try AuditLogContract.run(sink, log: sink, tenants: ("t1", "t2"))
    }

    @Test("replay guard")
    func replays() throws { try ReplayGuardContract.run(InMemoryReplayGuard()) }

    @Test("broker keys")
    func brokerKeys() throws { try BrokerKeyStoreContract.run(InMemoryBrokerKeyStore()) }
}

@Suite("Single-flight")
struct SingleFlightTests {
    @Test("followers wait for the leader's value and only the leader runs")
    func followersShareLeaderValue() {
        let f = SingleFlight<String, Int>()
        let got = Mutex<[Int]>([])
        #expect(f.join("k") { v in got.withLock { $0.append(v) } })
        #expect(!f.join("k") { v in got.withLock { $0.append(v) } })
        #expect(f.inFlight == 1)
        f.finish("k", 42)
        #expect(got.withLock { $0 } == [42, 42] && f.inFlight == 0)
        #expect(f.join("k") { _ in })
    }
}

@Suite("App token store contract: in memory")
struct InMemoryAppTokenContractTests {
    @Test("app tokens", arguments: AppTokenStoreContract.allCases)
    func appTokens(_ c: AppTokenStoreContract) throws { try c.run(InMemoryAppTokenStore(), tenants: ("t1", "t2")) }
}
