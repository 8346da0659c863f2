import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// After a change of database server, the refresh driver re-applies what it committed and the
/// new server lacks, and presents no refresh token before: the in-memory store stands in for a
/// new primary that never received a rotation (`replace`), the identities are told by hand.
@Suite("Failover: re-application before any presentation")
struct FailoverReapplyTests {
    static let old = ServerIdentity(systemID: "42", timeline: 1)
    static let promoted = ServerIdentity(systemID: "42", timeline: 2)

    func harness(hold: TimeInterval, lockTimeout: TimeInterval = 0.3, wrap: @escaping (InMemorySessionStore) -> any SessionStore = { $0 })
        throws -> (TokenServiceHarness, FailoverGuard) {
        let clock = ManualClock()
        let failover = FailoverGuard(sealer: TaggingSealer(), clock: clock, hold: hold)
        let h = try TokenServiceHarness(clock: clock, lockTimeout: lockTimeout, failover: failover, wrap: wrap)
        failover.observed(Self.old)
        return (h, failover)
    }

    /// Waits (briefly, really) for the background re-application of the current epoch.
    func reapplied(_ f: FailoverGuard, _ h: TokenServiceHarness) async throws {
        for _ in 0..<200 where f.heldUntil(now: h.clock.now()) == .distantFuture { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test("a rotation the new server lacks is re-applied, and refreshes are held until the others had time: the spent token is never presented")
    func heldThenReapplied() async throws {
        let (h, f) = try harness(hold: 30)
        let s = try h.addSession(ttl: 10)
        _ = try await h.token(.session(s.id)).get()                     // rt-0 presented, rt-1 committed
        try #require(h.endpoint.spentTokens == ["rt-0"])
        h.store.replace(s)                                               // the new primary never received it
        f.observed(Self.promoted)
        try await reapplied(f, h)
        #expect(try h.store.session(tenant: "t1", id: s.id)?.refreshToken == "rt-1")
        #expect(f.reapplied.count == 1 && f.rotationsReapplied.count == 1)
        // Within the hold: a caller waits for its deadline and is told to come back, the timer when to look again.
        let held = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        #expect(held == .failure(.refreshBusy) || held == .failure(.storeUnavailable))
        #expect(h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app") == .next(h.clock.now() + 30))
        #expect(h.endpoint.spentTokens == ["rt-0"])
        h.clock.advance(by: 31)
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()
        #expect(h.endpoint.spentTokens == ["rt-0", "rt-1"])
    }

    @Test("a restart of the same server holds nothing and re-applies nothing")
    func sameServer() async throws {
        let (h, f) = try harness(hold: 30)
        let s = try h.addSession(ttl: 10)
        _ = try await h.token(.session(s.id)).get()
        f.observed(Self.old)
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()
        #expect(h.endpoint.spentTokens == ["rt-0", "rt-1"] && f.serverChanges.count == 0)
    }

    @Test("a refresh whose attempt was written after its connection found a new server does not present: the rotation is re-applied over it")
    func changeBetweenStartAndPresent() async throws {
        let failover = Mutex<FailoverGuard?>(nil)
        let trip = Atomic<Bool>(false)
        let (h, f) = try harness(hold: 0) { store in
            // The start's write reaches the database through a connection opened to the new server.
            TrippingStore(store) { if trip.exchange(false, ordering: .relaxed) { failover.withLock { $0 }?.observed(Self.promoted) } }
        }
        failover.withLock { $0 = f }
        let s = try h.addSession(ttl: 10)
        _ = try await h.token(.session(s.id)).get()
        h.store.replace(s)
        trip.store(true, ordering: .relaxed)
        let r = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        #expect(h.endpoint.spentTokens == ["rt-0"])                     // rt-0 is spent: not presented again
        if case .success = r { Issue.record("the refresh was not held") }
        try await reapplied(f, h)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.refreshToken == "rt-1" && row.attempt == nil)
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()
        #expect(h.endpoint.spentTokens == ["rt-0", "rt-1"])
    }
}

/// A SessionStore that runs `before` ahead of every write under the lock.
final class TrippingStore: SessionStore, @unchecked Sendable {
    let inner: InMemorySessionStore
    let before: @Sendable () -> Void
    init(_ inner: InMemorySessionStore, before: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.before = before
    }
    func session(tenant: String, id: String) throws -> Session? { try inner.session(tenant: tenant, id: id) }
    func sessions(tenant: String, ids: [String]) throws -> [Session] { try inner.sessions(tenant: tenant, ids: ids) }
    func latestSession(tenant: String, client: String, subject: String) throws -> Session? {
        try inner.latestSession(tenant: tenant, client: client, subject: subject)
    }
    func latestSession(tenant: String, client: String, endUser: String) throws -> Session? {
        try inner.latestSession(tenant: tenant, client: client, endUser: endUser)
    }
    func insert(_ session: Session) throws { try inner.insert(session) }
    func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval,
                                   _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T {
        before()
        return try inner.withRefreshLockQueuing(tenant: tenant, id: id, timeout: timeout, body)
    }
    func writeIfUnchanged(_ write: Session, over seen: Session) throws -> Bool {
        before()
        return try inner.writeIfUnchanged(write, over: seen)
    }
    func touch(_ uses: [SessionUse]) throws { try inner.touch(uses) }
    func dueSessions(before: Date, limit: Int) throws -> [DueSession] { try inner.dueSessions(before: before, limit: limit) }
    func countGrantsExpiring(before: Date) throws -> Int { try inner.countGrantsExpiring(before: before) }
}
