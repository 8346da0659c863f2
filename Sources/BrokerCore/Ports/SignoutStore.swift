import Foundation

/// SignoutStore keeps bulk sign-out jobs and their items. Every job is read within its tenant.
/// Thread-safe.
public protocol SignoutStore: Sendable {
    /// Creates the job and snapshots its items (the tenant's sessions matching the filter and not
    /// revoked yet) in one transaction; a dry run stores the count only. With an idempotency key
    /// already used in the tenant, answers that job (`created` false) — or `conflict` when its
    /// filter or dry_run differ.
    func createJob(_ job: SignoutJob, idempotencyKey: String?) throws -> (SignoutJob, created: Bool)

    /// The tenant's job (another tenant's job id finds nothing).
    func job(tenant: String, id: String) throws -> SignoutJob?

    /// Claims up to `limit` pending items of any job whose lease has run out, leased until
    /// `now + lease`, and commits the claim: nothing stays open while the items are revoked.
    /// Items of a replica that died come back when their lease ends.
    func claimPendingItems(now: Date, lease: TimeInterval, limit: Int) throws -> [SignoutItem]

    /// Records claimed items' outcomes — only for items still pending under the claim they were
    /// taken with (a claimer whose lease ran out and was taken over records nothing) — and
    /// recomputes their jobs' counts and states, in one transaction.
    func record(_ outcomes: [SignoutItem.Result], now: Date) throws
}
