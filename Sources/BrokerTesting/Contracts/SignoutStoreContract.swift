import BrokerCore
import Foundation

/// SignoutStoreContract: a job snapshots its own tenant's sessions, is read within its tenant,
/// answers its idempotency key; items are claimed with a lease and recorded once.
public enum SignoutStoreContract: String, CaseIterable, Sendable {
    case jobsStayInTheirTenant, itemsAreLeasedAndRecorded, endUserFilterSnapshotsThatUserOnly

    public func run(_ store: any SignoutStore, sessions: any SessionStore, tenants: (String, String)) throws {
        switch self {
        case .jobsStayInTheirTenant: try Self.jobsStayInTheirTenant(store, sessions: sessions, tenants: tenants)
        case .itemsAreLeasedAndRecorded: try Self.itemsAreLeasedAndRecorded(store, sessions: sessions, tenants: tenants)
        case .endUserFilterSnapshotsThatUserOnly: try Self.endUserFilterSnapshotsThatUserOnly(store, sessions: sessions, tenants: tenants)
        }
    }

    static func seed(_ sessions: any SessionStore, _ tenants: (String, String), subject: String, _ n: (Int, Int)) throws {
        for _ in 0..<n.0 { try sessions.insert(SessionStoreContract.sample(tenant: tenants.0, subject: subject)) }
        for _ in 0..<n.1 { try sessions.insert(SessionStoreContract.sample(tenant: tenants.1, subject: subject)) }
    }

    static func job(_ tenant: String, _ filter: SignoutJob.Filter, dryRun: Bool = false) -> SignoutJob {
        SignoutJob(id: Contract.unique("so"), tenant: tenant, filter: filter, dryRun: dryRun, state: .running, total: 0, createdBy: "contract",
                   createdAt: Contract.t0)
    }

    static func jobsStayInTheirTenant(_ store: any SignoutStore, sessions: any SessionStore, tenants: (String, String)) throws {
        let subject = Contract.unique("leaving")
        try seed(sessions, tenants, subject: subject, (3, 2))
        let key = Contract.unique("key")
        let (j, created) = try store.createJob(job(tenants.0, .init(subject: subject)), idempotencyKey: key)
        try Contract.expect(created && j.total == 3 && j.state == .running, "the job did not snapshot its tenant's 3 sessions (\(j.total))")
        try Contract.expect(try store.job(tenant: tenants.1, id: j.id) == nil, "a job is visible from another tenant")
        try Contract.expect(try store.job(tenant: tenants.0, id: j.id)?.total == 3, "the job did not read back")
        let (again, createdAgain) = try store.createJob(job(tenants.0, .init(subject: subject)), idempotencyKey: key)
        try Contract.expect(!createdAgain && again.id == j.id, "the idempotency key did not answer the same job")
        do {
            _ = try store.createJob(job(tenants.0, .init(subject: subject + "-other")), idempotencyKey: key)
            throw Contract.Violation(description: "a reused idempotency key with another filter was accepted")
        } catch let e as BrokerError {
            try Contract.expect(e.code == "idempotency_key_reused", "a reused key failed with \(e.code)")
        }
        let (other, createdOther) = try store.createJob(job(tenants.1, .init(subject: subject)), idempotencyKey: key)
        try Contract.expect(createdOther && other.id != j.id && other.total == 2, "the same key in another tenant is not its own job")
        let (dry, _) = try store.createJob(job(tenants.0, .init(subject: subject), dryRun: true), idempotencyKey: nil)
        try Contract.expect(dry.total == 3 && dry.state == .done, "a dry run did not count and finish")
    }

    /// A job by end user snapshots that user's sessions of its tenant (at every client), not a
    /// subject of the same name nor the same id in another tenant; it reads back with its filter.
    static func endUserFilterSnapshotsThatUserOnly(_ store: any SignoutStore, sessions: any SessionStore, tenants: (String, String)) throws {
        let user = Contract.unique("eu-leaving")
        let mine = [SessionStoreContract.sample(tenant: tenants.0, endUser: user), SessionStoreContract.sample(tenant: tenants.0, client: "other", endUser: user)]
        for s in mine + [SessionStoreContract.sample(tenant: tenants.1, endUser: user), SessionStoreContract.sample(tenant: tenants.0, subject: user)] {
            try sessions.insert(s)
        }
        let (j, _) = try store.createJob(job(tenants.0, .init(endUser: user)), idempotencyKey: nil)
        try Contract.expect(j.total == 2, "the job by end user did not snapshot exactly that user's 2 sessions (\(j.total))")
        try Contract.expect(try store.job(tenant: tenants.0, id: j.id)?.filter == .init(endUser: user), "the job's end user filter did not read back")
        let items = try store.claimPendingItems(now: Date(), lease: 30, limit: 100_000).filter { $0.job == j.id }
        try Contract.expect(Set(items.map(\.session)) == Set(mine.map(\.id)), "the job's items are not the end user's sessions")
        let (dry, _) = try store.createJob(job(tenants.1, .init(endUser: user), dryRun: true), idempotencyKey: nil)
        try Contract.expect(dry.total == 1, "the other tenant's job by the same end user counted \(dry.total), not its 1")
    }

    static func itemsAreLeasedAndRecorded(_ store: any SignoutStore, sessions: any SessionStore, tenants: (String, String)) throws {
        let subject = Contract.unique("leased")
        try seed(sessions, tenants, subject: subject, (3, 1))
        let (j, _) = try store.createJob(job(tenants.0, .init(subject: subject)), idempotencyKey: nil)
        let now = Date()
        func mine(_ at: Date) throws -> [SignoutItem] {
            try store.claimPendingItems(now: at, lease: 30, limit: 100_000).filter { $0.job == j.id }
        }
        let claimed = try mine(now)
        try Contract.expect(claimed.count == 3 && claimed.allSatisfy { $0.tenant == tenants.0 }, "the job's items were not claimed with their tenant")
        try Contract.expect(try mine(now.addingTimeInterval(29)).isEmpty, "a leased item was claimed again within its lease")
        let reclaimed = try mine(now.addingTimeInterval(31))
        try Contract.expect(reclaimed.count == 3, "items whose lease ran out did not come back")
        // The first claimer, its lease taken over, reports late: nothing is recorded.
        try store.record(claimed.map { SignoutItem.Result($0, .failed) }, now: now)
        try Contract.expect(try store.job(tenant: tenants.0, id: j.id)?.failed == 0, "a claimer whose lease was taken over recorded outcomes")
        let results = reclaimed.enumerated().map { SignoutItem.Result($1, $0 == 0 ? .failed : .revoked) }
        try store.record(results, now: now)
        try store.record(results.map { SignoutItem.Result($0.item, .failed) }, now: now)   // a repeat changes nothing
        let done = try store.job(tenant: tenants.0, id: j.id)
        try Contract.expect(done?.state == .done && done?.revoked == 2 && done?.failed == 1, "the outcomes were not recorded once, or the job not finished")
        try Contract.expect(try mine(now.addingTimeInterval(100)).isEmpty, "a recorded item was claimed again")
    }
}
