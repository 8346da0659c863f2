import Foundation

/// SignoutStore keeps bulk sign-out jobs and their items. Thread-safe.
public protocol SignoutStore: Sendable {
    /// Creates the job and snapshots its items (the tenant's sessions matching the filter and not
    /// revoked yet) in one transaction; a dry run stores the count only. With an idempotency key
    /// already used in the tenant, answers that job (`created` false) — or `conflict` when its
    /// filter or dry_run differ.
    func createJob(_ job: SignoutJob, idempotencyKey: String?) throws -> (SignoutJob, created: Bool)

    func job(id: String) throws -> SignoutJob?

    /// Claims up to `limit` pending items of any job (FOR UPDATE SKIP LOCKED, held while `body`
    /// runs), records the outcomes `body` returns, updates the jobs' counts and states, and
    /// commits. If the replica dies meanwhile the claim rolls back and another replica takes the
    /// items again. Returns how many items were processed.
    func processPendingItems(limit: Int, _ body: ([SignoutItem]) -> [SignoutItem.Outcome]) throws -> Int
}
