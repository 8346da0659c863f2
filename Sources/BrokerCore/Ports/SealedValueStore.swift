import Foundation

/// SealedValueStore sees every sealed column (tokens, client secrets and keys, outbox entries,
/// pending logins) by the id of the key that sealed each value, and re-seals them under the
/// current key while replicas serve.
public protocol SealedValueStore: Sendable {
    /// Sealed values stored, by key id, over every sealed column of every tenant (without
    /// `pendingLogins`: only the columns `reseal` re-seals).
    func countByKey(pendingLogins: Bool) throws -> [String: Int]

    /// Counts every sealed value now and keeps the count as the fleet's, counted at `now`.
    func recount(now: Date) throws -> SealedValueCount

    /// The fleet's count as kept. When it is older than `maxAge` (or none was kept), the caller
    /// counts first — unless another is counting right now: then it gets the kept one. However
    /// many replicas ask, one counts.
    func sharedCount(maxAge: TimeInterval, now: Date) throws -> SealedValueCount

    /// Re-seals under the sealer's current key at most `limit` values sealed under another key,
    /// in key order after `cursor` (nil: from the start), each batch in one short transaction.
    /// Rows another transaction holds (a refresh) are skipped, to be found by a later pass;
    /// values that do not open (a key this keyring lacks) are left as they are and counted.
    /// Pending logins are not re-sealed: they expire within minutes.
    func reseal(after cursor: ResealBatch.Cursor?, limit: Int) throws -> ResealBatch
}

extension SealedValueStore {
    /// Every sealed value, pending logins included.
    public func countByKey() throws -> [String: Int] { try countByKey(pendingLogins: true) }
}
