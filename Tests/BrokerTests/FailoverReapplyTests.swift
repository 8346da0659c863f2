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

    /// Two sessions rotated through this replica, then the first rolled back to before its
    /// rotation, as a new server that lacks it has it.
    func twoRotatedOneLost(_ h: TokenServiceHarness) async throws -> (lost: Session, kept: Session) {
        let lost = try h.addSession(subject: "lost", ttl: 10, refreshToken: "rt-a")
        let kept = try h.addSession(subject: "kept", ttl: 10, refreshToken: "rt-b")
        _ = try await h.token(.session(lost.id)).get()
        _ = try await h.token(.session(kept.id)).get()
        h.store.replace(lost)
        return (lost, kept)
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
        // Within the hold: the timer is told when to look again, a caller waits for its deadline and is told to come back.
        #expect(h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app") == .next(h.clock.now() + 30))
        let held = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        #expect(held == .failure(.refreshBusy))
        try await Task.sleep(for: .milliseconds(100))   // the held flight's own deadline (the caller's, 0.3 s) passes too
        #expect(h.endpoint.spentTokens == ["rt-0"])
        h.clock.advance(by: 31)
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()
        #expect(h.endpoint.spentTokens == ["rt-0", "rt-1"])
    }

    @Test("an attempt recorded, then lost with the old server before its token was presented, is not restored: nobody waits out its patience")
    func abandonedAttemptNotRestored() async throws {
        let failover = Mutex<FailoverGuard?>(nil)
        let lose = Mutex<(@Sendable () -> Void)?>(nil)
        let (h, f) = try harness(hold: 0) { store in
            // Right after the start's write: the server fails over to one that never received it.
            TrippingStore(store, after: { lose.withLock { l in defer { l = nil }; l?() } })
        }
        failover.withLock { $0 = f }
        let s = try h.addSession(ttl: 10)
        lose.withLock { $0 = { h.store.replace(s); failover.withLock { $0 }?.observed(Self.promoted) } }
        _ = await h.token(.session(s.id))   // not presented by this flight; the caller's retry may present rt-0, never presented before
        try await reapplied(f, h)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.attempt == nil)          // the abandoned attempt was not restored
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()
        let spent = h.endpoint.spentTokens
        #expect(spent.first == "rt-0" && Set(spent).count == spent.count)   // each token presented once
    }

    @Test("only the sessions the new server lacks are locked and written again; the others are read in one batch")
    func onlyLackingLocked() async throws {
        let (h, f) = try harness(hold: 0)
        let (lost, kept) = try await twoRotatedOneLost(h)
        let before = h.store.lockings.load(ordering: .relaxed)
        f.observed(Self.promoted)
        try await reapplied(f, h)
        #expect(h.store.lockings.load(ordering: .relaxed) == before + 1)
        #expect(f.reapplied.count == 1 && f.rotationsReapplied.count == 1)
        let spent = Set(h.endpoint.spentTokens)
        #expect(spent == ["rt-a", "rt-b"])
        let rows = try [lost.id, kept.id].map { try #require(try h.store.session(tenant: "t1", id: $0)) }
        #expect(rows.allSatisfy { $0.refreshToken.map { !spent.contains($0) } ?? false })   // both hold the token their rotation gave
    }

    @Test("a new server that does not answer the batched read at once is read in a batch again, not one locked transaction per journaled session")
    func batchedReadRetried() async throws {
        let tripping = Mutex<TrippingStore?>(nil)
        let (h, f) = try harness(hold: 0) { inner in
            let t = TrippingStore(inner)
            tripping.withLock { $0 = t }
            return t
        }
        _ = try await twoRotatedOneLost(h)
        let before = h.store.lockings.load(ordering: .relaxed)
        tripping.withLock { $0?.failBatches.store(3, ordering: .relaxed) }
        f.observed(Self.promoted)
        try await reapplied(f, h)
        #expect(f.heldUntil(now: h.clock.now()) != .distantFuture)
        #expect(h.store.lockings.load(ordering: .relaxed) == before + 1)   // only the lacking one, after the batch was read
        #expect(f.reapplied.count == 1)
    }

    @Test("a rotation committed just before a failover longer than the journal's age is still re-applied: age stops while out of touch")
    func longFailover() async throws {
        let (h, f) = try harness(hold: 0)
        let s = try h.addSession(ttl: 1_000)
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()   // rt-0 -> rt-1 committed
        h.store.replace(s)
        h.clock.advance(by: 600)                                         // a 10-minute failover (the journal keeps 300 s)
        f.observed(Self.promoted)
        try await reapplied(f, h)
        #expect(try h.store.session(tenant: "t1", id: s.id)?.refreshToken == "rt-1")
        #expect(f.rotationsReapplied.count == 1)
    }

    @Test("after a change, a refresh token introspection could not answer for is not presented: the refresh backs off, the attempt is cleared")
    func introspectionErrorWithholds() async throws {
        let clock = ManualClock()
        let f = FailoverGuard(sealer: TaggingSealer(), clock: clock, hold: 0, proofWindow: 600)
        let endpoint = ScriptedTokenEndpoint(introspection: { _ throws(TokenEndpointError) in throw .transient(reason: "timeout", retryAfter: nil) })
        let h = try TokenServiceHarness(clock: clock, endpoint: endpoint, failover: f)
        f.observed(Self.old)
        let s = try h.addSession(ttl: 10)                                // rt-0: never refreshed by this replica
        f.observed(Self.promoted)
        try await reapplied(f, h)
        _ = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        #expect(endpoint.introspectedTokens == ["rt-0"] && endpoint.spentTokens.isEmpty)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.refreshToken == "rt-0" && row.attempt == nil && row.state == .active)
    }

    @Test("a start written on a new server that no new connection reported (a pooler kept them): the identity read before presenting finds it, nothing is presented")
    func confirmedBeforePresenting() async throws {
        let (h, f) = try harness(hold: 0)
        let s = try h.addSession(ttl: 10)
        _ = try await h.token(.session(s.id)).get()                     // rt-0 -> rt-1 committed
        h.store.replace(s)                                               // the new primary lacks it
        let reads = Atomic<Int>(0)
        f.confirmWith { if reads.add(1, ordering: .relaxed).newValue == 1 { f.observed(Self.promoted) } }
        _ = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        try await reapplied(f, h)
        // rt-0 is spent: never presented again (the caller's retry may present rt-1, re-applied meanwhile).
        let spent = h.endpoint.spentTokens
        #expect(spent.filter { $0 == "rt-0" }.count == 1 && Set(spent).count == spent.count)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.refreshToken.map { !spent.contains($0) } == true)
        // An identity that cannot be read confirms nothing: not presented either.
        f.confirmWith { throw BrokerError.storeUnavailable }
        _ = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        #expect(h.endpoint.spentTokens == spent)
        f.confirmWith {}
        h.clock.advance(by: 120)                                          // past the backoff of the refresh not presented
        _ = try await h.token(.session(s.id), TokenRequest(forceRefresh: true)).get()
        let after = h.endpoint.spentTokens
        #expect(after.count == spent.count + 1 && Set(after).count == after.count)
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

/// A finished refresh whose attempt record the database lost: written, never revoked, while the
/// row holds the token it presented.
@Suite("Failover: an answer whose attempt record was lost")
struct LostAttemptTests {
    @Test("an answer kept in memory whose attempt the new server lacks is written when the row still holds the token presented; nothing is revoked")
    func pendingAnswerOverLostAttempt() async throws {
        let tripping = Mutex<TrippingStore?>(nil)
        let h = try TokenServiceHarness { store in
            let t = TrippingStore(store)
            tripping.withLock { $0 = t }
            return t
        }
        let store = try #require(tripping.withLock { $0 })
        let s = try h.addSession(ttl: 10)
        store.failUnlocked.store(true, ordering: .relaxed)      // the answer's write does not commit
        _ = await h.token(.session(s.id))
        #expect(h.endpoint.spentTokens == ["rt-0"] && h.refresher.pendingAnswers == 1)
        h.store.replace(s)                                       // and the new server lacks the attempt
        store.failUnlocked.store(false, ordering: .relaxed)
        #expect(h.refresher.retryPendingAnswers() == 0)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.refreshToken == "rt-1" && row.attempt == nil && row.state == .active)
        #expect(h.store.revoked.withLock { $0 }.isEmpty)
    }
}

/// An IdP answer written after a change of server and before its session was re-applied.
@Suite("Failover: an answer arriving before its session is re-applied")
struct AnswerBeforeReapplyTests {
    @Test("an answer whose attempt and rotation the new server lacks, written while the re-application is still running, re-applies that session first: its token is kept, never revoked")
    func answerBeforeReapply() async throws {
        let tripping = Mutex<TrippingStore?>(nil)
        let clock = ManualClock()
        let f = FailoverGuard(sealer: TaggingSealer(), clock: clock, hold: 0)
        let h = try TokenServiceHarness(clock: clock, failover: f) { store in
            let t = TrippingStore(store)
            tripping.withLock { $0 = t }
            return t
        }
        f.observed(FailoverReapplyTests.old)
        let store = try #require(tripping.withLock { $0 })
        let s = try h.addSession(ttl: 10)
        _ = try await h.token(.session(s.id)).get()                    // rt-0 -> rt-1 committed
        store.failUnlocked.store(true, ordering: .relaxed)             // the next answer's write does not commit
        _ = await h.token(.session(s.id), TokenRequest(forceRefresh: true))
        #expect(h.endpoint.spentTokens == ["rt-0", "rt-1"] && h.refresher.pendingAnswers == 1)
        // The new server has neither the rotation to rt-1 nor the attempt presenting it; its
        // re-application is held at its first read.
        store.holdBatch.store(true, ordering: .relaxed)
        h.store.replace(s)
        f.observed(FailoverReapplyTests.promoted)
        store.failUnlocked.store(false, ordering: .relaxed)
        #expect(h.refresher.retryPendingAnswers() == 0)
        store.holdBatch.store(false, ordering: .relaxed)
        for _ in 0..<200 where f.heldUntil(now: clock.now()) == .distantFuture { try await Task.sleep(for: .milliseconds(5)) }
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.refreshToken == "rt-2" && row.attempt == nil && row.state == .active)
        #expect(h.store.revoked.withLock { $0 }.isEmpty)
    }
}

/// A SessionStore that runs `before` ahead of every write (under the lock, or compared and set),
/// and fails the compared-and-set ones while `failUnlocked` is set.
final class TrippingStore: SessionStore, @unchecked Sendable {
    let inner: InMemorySessionStore
    let before: @Sendable () -> Void
    let after: @Sendable () -> Void
    let failUnlocked = Atomic<Bool>(false)
    init(_ inner: InMemorySessionStore, before: @escaping @Sendable () -> Void = {}, after: @escaping @Sendable () -> Void = {}) {
        self.inner = inner
        self.before = before
        self.after = after
    }
    func session(tenant: String, id: String) throws -> Session? { try inner.session(tenant: tenant, id: id) }
    /// While set, batched reads wait (a re-application held at its first read).
    let holdBatch = Atomic<Bool>(false)
    /// Batched reads still to fail as an unreachable store does.
    let failBatches = Atomic<Int>(0)
    func sessions(tenant: String, ids: [String]) throws -> [Session] {
        while holdBatch.load(ordering: .relaxed) { usleep(1_000) }
        if failBatches.load(ordering: .relaxed) > 0 {
            failBatches.subtract(1, ordering: .relaxed)
            throw BrokerError.storeUnavailable
        }
        return try inner.sessions(tenant: tenant, ids: ids)
    }
    func latestSession(tenant: String, client: String, subject: String) throws -> Session? {
        try inner.latestSession(tenant: tenant, client: client, subject: subject)
    }
    func latestSession(tenant: String, client: String, endUser: String) throws -> Session? {
        try inner.latestSession(tenant: tenant, client: client, endUser: endUser)
    }
    func insert(_ session: Session) throws { try inner.insert(session) }
    func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval, reapplying: Bool,
                                   _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T {
        before()
        defer { after() }
        return try inner.withRefreshLockQueuing(tenant: tenant, id: id, timeout: timeout, reapplying: reapplying, body)
    }
    func writeIfUnchanged(_ write: Session, over seen: Session) throws -> Bool {
        before()
        if failUnlocked.load(ordering: .relaxed) { throw BrokerError.storeUnavailable }
        return try inner.writeIfUnchanged(write, over: seen)
    }
    func touch(_ uses: [SessionUse]) throws { try inner.touch(uses) }
    func dueSessions(before: Date, limit: Int) throws -> [DueSession] { try inner.dueSessions(before: before, limit: limit) }
    func countGrantsExpiring(before: Date) throws -> Int { try inner.countGrantsExpiring(before: before) }
}
