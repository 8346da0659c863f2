import BrokerCore
import Foundation
import Synchronization

/// SignoutService runs bulk sign-outs (spec §4.3): a job snapshots the matching sessions when
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
                ratePerClient: Double, parallelism: Int = 8, lease: TimeInterval = 30) {
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
        if let c = filter.client, try registry.client(tenant: tenant, id: c, now: now) == nil { throw BrokerError.notFound("client") }
        if let k = idempotencyKey, k.isEmpty || k.utf8.count > 200 {
            throw BrokerError.badRequest(code: "invalid_request", message: "Idempotency-Key must be 1...200 bytes")
        }
        var rng = SystemRandomNumberGenerator()
        let job = SignoutJob(id: "so_" + Identifiers.token(bytes: 16, using: &rng), tenant: tenant, filter: filter, dryRun: dryRun,
                             state: .running, total: 0, createdBy: actor, createdAt: now)
        let r = try store.createJob(job, idempotencyKey: idempotencyKey)
        if r.created {
            audit.record(AuditEvent(at: now, actor: actor, action: dryRun ? "signout.dry_run" : "signout.create", tenant: tenant, session: nil,
                                    outcome: "\(r.0.id) total=\(r.0.total)"))
        }
        return r
    }

    /// The tenant's job (the route has authorized the caller for the tenant).
    public func job(tenant: String, id: String) throws -> SignoutJob? {
        try store.job(tenant: tenant, id: id)
    }

    /// Revokes one batch of pending items of any job; returns how many were processed (0: idle).
    @discardableResult
    public func work(batch: Int = 100) -> Int {
        guard let items = try? store.claimPendingItems(now: clock.now(), lease: lease, limit: batch), !items.isEmpty else { return 0 }
        let outcomes = Mutex([SignoutItem.Outcome](repeating: .failed, count: items.count))
        DispatchQueue.concurrentPerform(iterations: min(parallelism, items.count)) { lane in
            for i in stride(from: lane, to: items.count, by: parallelism) {
                let o = revoke(items[i])
                outcomes.withLock { $0[i] = o }
            }
        }
        let results = outcomes.withLock { o in zip(items, o).map { SignoutItem.Result($0, $1) } }
        // Not recorded (the database is away): the lease runs out and the items are revoked
        // again, which changes nothing for those already revoked.
        try? store.record(results, now: clock.now())
        return items.count
    }

    private func revoke(_ item: SignoutItem) -> SignoutItem.Outcome {
        let wait = limiters.withLock { l in
            var limiter = l[item.tenant + "/" + item.client] ?? RateLimiter(rate: ratePerClient)
            let d = limiter.delay(now: clock.now())
            l[item.tenant + "/" + item.client] = limiter
            return d
        }
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        do {
            _ = try revocations.revoke(tenant: item.tenant, id: item.session, actor: "signout:" + item.job)
            return .revoked
        } catch {
            return .failed
        }
    }
}
