import BrokerCore
import Foundation
import Synchronization

/// InMemorySignoutStore is the SignoutStore for unit tests, snapshotting from an
/// InMemorySessionStore; it honours SignoutStoreContract.
public final class InMemorySignoutStore: SignoutStore {
    private struct Item {
        let item: SignoutItem
        var state: String
        var leaseUntil: Date?
        var lease: String?
    }

    private struct State {
        var jobs: [String: SignoutJob] = [:]
        var keys: [String: String] = [:]
        var items: [Item] = []
    }

    private let sessions: InMemorySessionStore
    private let state = Mutex(State())

    public init(sessions: InMemorySessionStore) { self.sessions = sessions }

    public func createJob(_ j: SignoutJob, idempotencyKey: String?) throws -> (SignoutJob, created: Bool) {
        let f = j.filter
        let matching = sessions.all().filter { s in
            s.tenant == j.tenant && s.state != .revoked && (f.subject.map { $0 == s.subject } ?? true) && (f.client.map { $0 == s.client } ?? true)
                && (f.endUser.map { $0 == s.endUser } ?? true)
                && (f.createdBefore.map { s.createdAt < $0 } ?? true) && (f.idleSince.map { (s.lastUsedAt ?? s.createdAt) < $0 } ?? true)
        }
        return try state.withLock { st in
            if let key = idempotencyKey, let existing = st.keys[j.tenant + "\u{0}" + key].flatMap({ st.jobs[$0] }) {
                guard existing.filter == j.filter && existing.dryRun == j.dryRun else {
                    throw BrokerError.conflict(code: "idempotency_key_reused", message: "this Idempotency-Key was used for another sign-out")
                }
                return (existing, false)
            }
            var created = j
            created.total = matching.count
            let done = j.dryRun || matching.isEmpty
            created.state = done ? .done : .running
            created.finishedAt = done ? j.createdAt : nil
            st.jobs[j.id] = created
            if let key = idempotencyKey { st.keys[j.tenant + "\u{0}" + key] = j.id }
            if !j.dryRun {
                st.items += matching.map { Item(item: SignoutItem(job: j.id, tenant: $0.tenant, session: $0.id, client: $0.client), state: "pending") }
            }
            return (created, true)
        }
    }

    public func job(tenant: String, id: String) throws -> SignoutJob? {
        state.withLock { st in st.jobs[id].flatMap { $0.tenant == tenant ? $0 : nil } }
    }

    public func claimPendingItems(now: Date, lease: TimeInterval, limit: Int) throws -> [SignoutItem] {
        let claim = "cl_" + UUID().uuidString
        return state.withLock { st in
            var out: [SignoutItem] = []
            for i in st.items.indices where out.count < limit && st.items[i].state == "pending" && (st.items[i].leaseUntil.map { $0 <= now } ?? true) {
                st.items[i].leaseUntil = now.addingTimeInterval(lease)
                st.items[i].lease = claim
                let it = st.items[i].item
                out.append(SignoutItem(job: it.job, tenant: it.tenant, session: it.session, client: it.client, lease: claim))
            }
            return out
        }
    }

    public func record(_ results: [SignoutItem.Result], now: Date) throws {
        state.withLock { st in
            for r in results {
                if let i = st.items.firstIndex(where: { $0.item.job == r.item.job && $0.item.session == r.item.session && $0.state == "pending"
                                                        && $0.lease != nil && $0.lease == r.item.lease }) {
                    st.items[i].state = r.outcome.rawValue
                    st.items[i].leaseUntil = nil
                    st.items[i].lease = nil
                }
            }
            for id in Set(results.map(\.item.job)) {
                guard var j = st.jobs[id] else { continue }
                let mine = st.items.filter { $0.item.job == id }
                j.revoked = mine.filter { $0.state == "revoked" }.count
                j.failed = mine.filter { $0.state == "failed" }.count
                let pending = mine.filter { $0.state == "pending" }.count
                j.state = pending == 0 ? .done : .running
                j.finishedAt = pending == 0 ? (j.finishedAt ?? now) : nil
                st.jobs[id] = j
            }
        }
    }
}
