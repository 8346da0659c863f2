import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// A due session's refresh starts without the lock: decided on the row as read, its attempt
/// recorded by a version-checked write.
@Suite("Due refreshes without the lock")
struct DueRefreshTests {
    @Test("a due refresh takes no lock: its attempt and its answer are version-checked writes over the rows they were decided on")
    func takesNoLock() throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 10)
        h.clock.advance(by: 3_300)   // its next_refresh_at
        let outcome = h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app")
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(outcome == .next(row.nextRefreshAt))
        #expect(row.version == s.version + 2 && row.attempt == nil && row.refreshToken == "rt-1")
        #expect(h.endpoint.spentTokens == ["rt-0"])
        #expect(h.store.lockings.load(ordering: .relaxed) == 0)
    }

    @Test("another replica's attempt written between the read and the write: the refresh token is not presented")
    func movedBetweenReadAndWrite() throws {
        let competitor = Mutex<Int64?>(nil)
        let h = try TokenServiceHarness(wrap: { inner in
            InterferingStore(inner) { seen in
                // Another replica decided on the same row and recorded its attempt first.
                _ = try? inner.withRefreshLock(tenant: seen.tenant, id: seen.id, timeout: 1) { locked -> (write: Session?, result: Int) in
                    var w = locked
                    w.version += 1
                    w.attempt = RefreshAttempt(id: "att_other", startedAt: Date())
                    competitor.withLock { $0 = w.version }
                    return (w, 0)
                }
            }
        })
        let s = try h.addSession(ttl: 10)
        h.clock.advance(by: 3_300)
        #expect(h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app") == .busy)
        #expect(h.endpoint.spentTokens.isEmpty, "a refresh token was presented over another replica's attempt")
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        #expect(row.attempt?.id == "att_other" && row.version == competitor.withLock { $0 })
    }

    @Test("a due session another replica already refreshed costs one read: no lock, no write, no IdP call")
    func alreadyRefreshedElsewhere() throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 10)
        h.clock.advance(by: 3_300)
        let later = h.clock.now() + 3_300
        _ = try h.store.withRefreshLock(tenant: "t1", id: s.id, timeout: 1) { locked -> (write: Session?, result: Int) in
            var w = locked
            w.version += 1
            w.nextRefreshAt = later
            return (w, 0)
        }
        let outcome = h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app")
        #expect(outcome == .next(later))
        #expect(h.endpoint.spentTokens.isEmpty)
        #expect(h.store.lockings.load(ordering: .relaxed) == 1)   // the other replica's
        #expect(try h.store.session(tenant: "t1", id: s.id)?.version == s.version + 1)
    }

    /// A harness whose service reads through a store that counts single-row reads.
    static func counting() throws -> (TokenServiceHarness, InterferingStore) {
        let counted = Mutex<InterferingStore?>(nil)
        let h = try TokenServiceHarness(wrap: { inner in
            let store = InterferingStore(inner) { _ in }
            counted.withLock { $0 = store }
            return store
        })
        return (h, counted.withLock { $0! })
    }

    @Test("a due refresh given its tick's row reads nothing more: the write over it, the IdP, the answer")
    func tickRowSparesTheRead() throws {
        let (h, counted) = try Self.counting()
        let s = try h.addSession(ttl: 10)
        h.clock.advance(by: 3_300)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        let outcome = h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app", read: DueRow(row, readAt: h.clock.now() - 1))
        #expect(outcome == .next(try h.store.session(tenant: "t1", id: s.id)?.nextRefreshAt))
        #expect(h.endpoint.spentTokens == ["rt-0"])
        #expect(counted.reads.load(ordering: .relaxed) == 0)
    }

    @Test("a tick's row older than DueRow.maxAge is read again")
    func oldTickRowIsReadAgain() throws {
        let (h, counted) = try Self.counting()
        let s = try h.addSession(ttl: 10)
        h.clock.advance(by: 3_300)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        _ = h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app",
                                 read: DueRow(row, readAt: h.clock.now() - DueRow.maxAge - 0.5))
        #expect(counted.reads.load(ordering: .relaxed) == 1)
        #expect(h.endpoint.spentTokens == ["rt-0"])
    }

    @Test("a tick's row that another replica refreshed since: the write over it is refused and nothing is presented")
    func supersededTickRow() throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 10)
        h.clock.advance(by: 3_300)
        let row = try #require(try h.store.session(tenant: "t1", id: s.id))
        _ = try h.store.withRefreshLock(tenant: "t1", id: s.id, timeout: 1) { locked -> (write: Session?, result: Int) in
            var w = locked
            w.version += 1
            w.refreshToken = "rt-other"
            w.nextRefreshAt = h.clock.now() + 3_300
            return (w, 0)
        }
        #expect(h.refresher.refreshDue(SessionKey(tenant: "t1", id: s.id), client: "app", read: DueRow(row, readAt: h.clock.now())) == .busy)
        #expect(h.endpoint.spentTokens.isEmpty, "a superseded refresh token was presented")
        #expect(try h.store.session(tenant: "t1", id: s.id)?.refreshToken == "rt-other")
    }
}

/// A store that runs `interfere` with the row a caller is about to write over, once, before
/// the write (what another replica does in between), and counts single-row reads.
final class InterferingStore: SessionStore, @unchecked Sendable {
    let inner: InMemorySessionStore
    let interfere: (Session) -> Void
    let done = Atomic<Bool>(false)
    let reads = Atomic<Int>(0)

    init(_ inner: InMemorySessionStore, _ interfere: @escaping (Session) -> Void) {
        self.inner = inner
        self.interfere = interfere
    }

    func writeIfUnchanged(_ write: Session, over seen: Session) throws -> Bool {
        if !done.exchange(true, ordering: .relaxed) { interfere(seen) }
        return try inner.writeIfUnchanged(write, over: seen)
    }

    func session(tenant: String, id: String) throws -> Session? {
        reads.add(1, ordering: .relaxed)
        return try inner.session(tenant: tenant, id: id)
    }
    func sessions(tenant: String, ids: [String]) throws -> [Session] { try inner.sessions(tenant: tenant, ids: ids) }
    func latestSession(tenant: String, client: String, subject: String) throws -> Session? {
        try inner.latestSession(tenant: tenant, client: client, subject: subject)
    }
    func latestSession(tenant: String, client: String, endUser: String) throws -> Session? {
        try inner.latestSession(tenant: tenant, client: client, endUser: endUser)
    }
    func insert(_ session: Session) throws { try inner.insert(session) }
    func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval, reapplying: Bool,
                                   _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T {
        try inner.withRefreshLockQueuing(tenant: tenant, id: id, timeout: timeout, reapplying: reapplying, body)
    }
    func touch(_ uses: [SessionUse]) throws { try inner.touch(uses) }
    func dueSessions(before: Date, limit: Int) throws -> [DueSession] { try inner.dueSessions(before: before, limit: limit) }
    func countGrantsExpiring(before: Date) throws -> Int { try inner.countGrantsExpiring(before: before) }
}
