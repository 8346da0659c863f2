import BrokerCore
import Foundation
import Synchronization

/// SignoutService runs bulk sign-outs: a job snapshots the matching sessions when
/// it is created; every replica then revokes its pending items in batches (`work`), each
/// session through RevocationService — so each is revoked here at once and at the IdP now or
/// from the outbox — with the IdP calls of each client rate-limited per replica. A batch is
/// claimed with a committed lease, revoked with no transaction open, then recorded.
///
/// Thread-safety: any thread; `work` is called by one loop per replica.
public final class SignoutService: Sendable {
    let store: any SignoutStore
    let revocations: RevocationService
    let registry: RegistryCache
    let audit: any AuditSink
    let clock: any Clock
    /// Sessions revoked per second and client, per replica (0: unlimited).
    let ratePerClient: Double
    let parallelism: Int
    /// How long a claimed batch stays with this replica. Longer than a batch takes, ideally; when
    /// it runs out first another replica revokes the rest again, which changes nothing.
    let lease: TimeInterval
    private let limiters = Mutex<[String: RateLimiter]>([:])

    public init(store: any SignoutStore, revocations: RevocationService, registry: RegistryCache, audit: any AuditSink, clock: any Clock,
                ratePerClient: Double, parallelism: Int = 16, lease: TimeInterval = 30) {
        self.store = store
        self.revocations = revocations
        self.registry = registry
        self.audit = audit
        self.clock = clock
        self.ratePerClient = ratePerClient
        self.parallelism = parallelism
        self.lease = lease
    }

    /// Creates a job (202 semantics: it runs in the background). An empty filter needs `all`.
    public func create(tenant: String, filter: SignoutJob.Filter, dryRun: Bool, idempotencyKey: String?, actor: String) throws -> (SignoutJob, created: Bool) {
        let now = clock.now()
        _ = try registry.activeTenant(tenant, now: now)
        guard filter.isEmpty == filter.all else {
            throw BrokerError.badRequest(code: "invalid_request", message: filter.all
                ? "'all' cannot be combined with other criteria" : "name at least one criterion, or \"all\": true")
        }
        _ = try EndUser.checked(filter.endUser)
        if let c = filter.client, try registry.client(tenant: tenant, id: c, now: now) == nil { throw BrokerError.notFound("client") }
        if let k = idempotencyKey, k.isEmpty || k.utf8.count > 200 {
            throw BrokerError.badRequest(code: "invalid_request", message: "Idempotency-Key must be 1...200 bytes")
        }
        var rng = SystemRandomNumberGenerator()
        let job = SignoutJob(id: "so_" + Identifiers.token(bytes: 16, using: &rng), tenant: tenant, filter: filter, dryRun: dryRun,
                             state: .running, total: 0, createdBy: actor, createdAt: now)
        let r = try store.createJob(job, idempotencyKey: idempotencyKey)
        if r.created {
            audit.record(AuditEvent(at: now, actor: actor, action: dryRun ? .signoutDryRun : .signoutCreate, tenant: tenant, session: nil,
                                    outcome: "\(r.0.id) total=\(r.0.total)"))
        }
        return r
    }

    /// The tenant's job (the route has authorized the caller for the tenant).
    public func job(tenant: String, id: String) throws -> SignoutJob? {
        try store.job(tenant: tenant, id: id)
    }

    /// Revokes one batch of pending items of any job; returns how many were processed (0: idle).
    /// Throws when the database could not be reached for the claim or the record (the caller
    /// logs it; unrecorded items come back when their lease runs out).
    /// The sessions of each job are revoked here in one transaction, their tokens then sent to
    /// the IdP `parallelism` at a time, each client's calls paced by its rate limit.
    @discardableResult
    public func work(batch: Int = 100) throws -> Int {
        let items = try store.claimPendingItems(now: clock.now(), lease: lease, limit: batch)
        guard !items.isEmpty else { return 0 }
        var results: [SignoutItem.Result] = []
        for group in Dictionary(grouping: items, by: { [$0.tenant, $0.job] }).values {
            let first = group[0]
            let revoked = revocations.revokeMany(tenant: first.tenant, sessions: group.map { ($0.session, $0.client) }, actor: "signout:" + first.job,
                                                 lanes: parallelism) { [self] client in pace(tenant: first.tenant, client: client) }
            results += group.map { SignoutItem.Result($0, revoked.contains($0.session) ? .revoked : .failed) }
        }
        // Not recorded (the database is away): the lease runs out and the items are revoked
        // again, which changes nothing for those already revoked.
        try store.record(results, now: clock.now())
        return items.count
    }

    /// Waits for the client's rate limit (per replica) before one session's IdP calls.
    private func pace(tenant: String, client: String) {
        let wait = limiters.withLock { l in
            var limiter = l[tenant + "/" + client] ?? RateLimiter(rate: ratePerClient)
            let d = limiter.delay(now: clock.now())
            l[tenant + "/" + client] = limiter
            return d
        }
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
    }
}
