import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// What the revocation outbox does when its own bookkeeping fails.
@Suite("Revocation outbox")
struct RevocationOutboxTests {
    /// The in-memory store, except that the outbox cannot forget confirmed entries.
    struct ForgetsNothing: RevocationStore {
        let store: InMemorySessionStore
        func revoke(tenant: String, id: String, timeout: TimeInterval, now: Date) throws
            -> (before: Session, after: Session, queued: [PendingRevocation]) { try store.revoke(tenant: tenant, id: id, timeout: timeout, now: now) }
        func revokeMany(tenant: String, ids: [String], now: Date) throws
            -> (revoked: [(before: Session, after: Session, queued: [PendingRevocation])], left: [String]) {
            try store.revokeMany(tenant: tenant, ids: ids, now: now)
        }
        func pendingRevocations(tenant: String, session: String) throws -> Int { try store.pendingRevocations(tenant: tenant, session: session) }
        func claimDueRevocations(now: Date, lease: TimeInterval, limit: Int) throws -> [PendingRevocation] {
            try store.claimDueRevocations(now: now, lease: lease, limit: limit)
        }
        func revocationsDelivered(tenant: String, ids: [String]) throws { throw BrokerError.storeUnavailable }
        func revocationFailed(tenant: String, id: String, next: Date, reason: String) throws {
            try store.revocationFailed(tenant: tenant, id: id, next: next, reason: reason)
        }
    }

    @Test("confirmed by the IdP but not forgotten by the outbox: logged, counted, and still pending (sent again when due)")
    func unrecordedConfirmationIsLogged() throws {
        let h = try TokenServiceHarness()
        let s = try h.addSession(ttl: 3600)
        let lines = Mutex<[LogLine]>([])
        let revocations = RevocationService(store: ForgetsNothing(store: h.store), registry: RegistryCache(store: h.registry, maxAge: 60),
                                            endpoint: h.endpoint, tokens: h.service, audit: h.audit, clock: h.clock, lockTimeout: 5,
                                            events: { line in lines.withLock { $0.append(line) } })
        let o = try revocations.revoke(tenant: "t1", id: s.id, actor: "admin")
        #expect(o.revokedNow && o.pendingAtIdP == 2)
        #expect(revocations.unrecorded.count == 2)
        #expect(lines.withLock { $0.map(\.event.code) } == ["revocation_unrecorded"])
        #expect(try h.store.pendingRevocations(tenant: "t1", session: s.id) == 2)
    }
}
