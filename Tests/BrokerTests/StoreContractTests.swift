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
