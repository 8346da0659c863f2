import BrokerCore
import Foundation

/// BacklogStoreContract: the backlog counts every tenant's unconfirmed revocations and running
/// sign-outs, names the oldest revocation's age, and drops what was confirmed or finished. The
/// backlog is global, so the contract reads what its own rows add to it (it must run alone).
/// The fixture writes outbox rows at chosen instants, which no port does: PostgreSQL only.
public enum BacklogStoreContract {
    public struct Fixture {
        /// Queues an unconfirmed revocation of the tenant, queued at the instant; answers its id.
        public var revocation: (String, Date) throws -> String
        /// Starts a running sign-out job of the tenant with that many pending items; answers its id.
        public var signout: (String, Int) throws -> String
        /// The revocation was confirmed, the job finished: their rows go.
        public var settle: (_ revocations: [String], _ jobs: [String]) throws -> Void

        public init(revocation: @escaping (String, Date) throws -> String, signout: @escaping (String, Int) throws -> String,
                    settle: @escaping ([String], [String]) throws -> Void) {
            (self.revocation, self.signout, self.settle) = (revocation, signout, settle)
        }
    }

    public static func run(_ store: any BacklogStore, fixture f: Fixture, tenants: (String, String)) throws {
        let before = try store.backlog()
        // Older than anything a shared database holds, so it is the oldest.
        let oldest = Date(timeIntervalSince1970: 100_000_000)   // 1973: before the retention contract's rows too
        let revocations = [try f.revocation(tenants.0, oldest), try f.revocation(tenants.1, oldest.addingTimeInterval(60)),
                           try f.revocation(tenants.1, oldest.addingTimeInterval(120))]
        let jobs = [try f.signout(tenants.0, 2), try f.signout(tenants.1, 3)]
        let during = try store.backlog()
        try Contract.expect(during.outboxDepth - before.outboxDepth == 3, "the outbox depth is not both tenants' rows")
        try Contract.expect(during.outboxOldest == oldest, "the oldest revocation is not the one queued first")
        try Contract.expect(during.signoutJobsRunning - before.signoutJobsRunning == 2, "running jobs are not both tenants'")
        try Contract.expect(during.signoutItemsPending - before.signoutItemsPending == 5, "pending items are not both tenants'")
        try f.settle(revocations, jobs)
        let after = try store.backlog()
        try Contract.expect(after.outboxDepth == before.outboxDepth && after.signoutJobsRunning == before.signoutJobsRunning
                            && after.signoutItemsPending == before.signoutItemsPending, "settled work is still counted")
        try Contract.expect(after.outboxOldest != oldest, "a confirmed revocation is still the oldest")
    }
}
