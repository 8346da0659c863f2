import BrokerCore
import Foundation

extension RefreshDriver {
    /// What one re-application after a change of database server found, by verdict.
    public struct FailoverTally: Sendable, Equatable {
        public var checked = 0
        public var reapplied = 0
        /// Of those re-applied, the rotations (the others recorded an attempt, a backoff, a rest).
        public var rotations = 0
        public var current = 0
        public var movedOn = 0
        /// Sessions that ended on the new server: the committed refresh token revoked.
        public var ended = 0
        /// Sessions gone from the new server, or whose entry no longer opens.
        public var gone = 0
        /// Sessions whose re-application failed for a cause that trying again does not mend.
        public var failed = 0
    }

    func reapplyInBackground(epoch: Int) {
        let t = Thread { [self] in reapply(epoch: epoch) }
        t.name = "failover-reapply"
        t.start()
    }

    /// Re-applies every write in the failover journal that the new server lacks
    /// (FailoverReapply), each under the session's lock, then writes the IdP answers kept in
    /// memory (PendingAnswers: after the attempts they answer are back), then opens the fence
    /// for this epoch. A session the store cannot reach yet is tried again, every 0.2 s, until
    /// it can or a later change starts its own re-application. One log line and the counters
    /// say what was found.
    @discardableResult
    public func reapply(epoch: Int) -> FailoverTally? {
        guard let failover else { return nil }
        let began = clock.now()
        var tally = FailoverTally()
        // Most journaled writes are there: read in batches, only those the new server lacks are
        // re-decided and written one by one under their locks.
        // The new server may not answer yet: the batched read is tried again (every 0.2 s, for
        // up to 5 s) before it is given up for one locked transaction per entry, which at a full
        // journal would outlast the other replicas' hold.
        var left = failover.entries(now: began)
        for tries in 1...25 {
            guard failover.epoch == epoch else { return nil }
            var read = FailoverTally()
            if let l = try? lacking(left, &read) {
                left = l
                tally = read
                break
            }
            if tries < 25 { Thread.sleep(forTimeInterval: 0.2) }
        }
        while !left.isEmpty {
            guard failover.epoch == epoch else { return nil }
            var again: [SessionKey] = []
            for key in left {
                do {
                    try reapply(key, &tally)
                } catch {
                    switch brokerError(error, key, doing: "a re-application after a change of database server") {
                    case .notFound: tally.gone += 1
                    // The new server not reachable yet, or the session's lock held: again shortly.
                    case .storeUnavailable, .refreshBusy: again.append(key)
                    // Anything else will not mend by trying again (logged as unexpected).
                    default: tally.failed += 1
                    }
                }
            }
            left = again
            if !left.isEmpty { Thread.sleep(forTimeInterval: 0.2) }
        }
        retryPendingAnswers()
        failover.reapplied.add(tally.reapplied)
        failover.rotationsReapplied.add(tally.rotations)
        failover.revokedAfterChange.add(tally.ended)
        let ms = Int(clock.now().timeIntervalSince(began) * 1000)
        events(LogLine(tenant: "", client: "", session: nil, event: RefreshEvent(tally.failed > 0 ? .error : tally.reapplied + tally.ended > 0 ? .warn : .info, "failover_reapplied",
            "after the change of database server, \(tally.reapplied) of the \(tally.checked) writes this replica committed lately were missing "
                + "and were re-applied (\(tally.rotations) refresh-token rotations); \(tally.current) were there, \(tally.movedOn) superseded, "
                + "\(tally.ended) on sessions that ended meanwhile (their refresh tokens revoked), \(tally.gone) on sessions gone, \(tally.failed) failed; \(ms) ms")))
        failover.reconciled(epoch: epoch)
        return tally
    }

    /// Ends the session whose recorded attempt's token introspection found replaced
    /// (RefreshMachine.superseded), under its lock.
    func superseded(_ key: SessionKey, _ client: ClientRegistration, _ attempt: RefreshAttempt) -> RefreshFinish {
        do {
            let f = try journaled(key) {
                try store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: lockTimeout) { row in
                    let f = RefreshMachine.superseded(row, attempt: attempt)
                    return (f.write, f.revoke, (f, f.write, row))
                }
            }
            if let e = f.event { log(key, client, e) }
            return f
        } catch {
            return RefreshFinish(result: .failure(brokerError(error, key)))
        }
    }

    /// The journaled sessions whose row, read in batches of 500 without a lock, lacks the
    /// committed write; the others are counted (rows only move forward: what is there or
    /// superseded stays so).
    private func lacking(_ keys: [SessionKey], _ tally: inout FailoverTally) throws -> [SessionKey] {
        guard let failover else { return [] }
        var lacking: [SessionKey] = []
        for (tenant, ids) in Dictionary(grouping: keys, by: \.tenant) {
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = ids[start..<min(start + 500, ids.count)]
                let rows = Dictionary(try store.sessions(tenant: tenant, ids: chunk.map(\.id)).map { ($0.id, $0) }) { a, _ in a }
                for key in chunk {
                    guard let row = rows[key.id] else { tally.gone += 1; continue }
                    guard let (committed, replaced) = failover.committed(key, now: clock.now()) else { tally.gone += 1; continue }
                    switch FailoverReapply.decide(row, committed: committed, replaced: replaced).verdict {
                    case .current: tally.checked += 1; tally.current += 1
                    case .movedOn: tally.checked += 1; tally.movedOn += 1
                    case .reapplied, .ended: lacking.append(key)
                    }
                }
            }
        }
        return lacking
    }

    /// Re-applies `key` alone, when this replica's re-application of the current epoch is not
    /// done yet (an IdP answer about to be written for it). Throws as the store does.
    func reapplyFirst(_ key: SessionKey) throws {
        guard let failover, !failover.isReconciled else { return }
        var tally = FailoverTally()
        try reapply(key, &tally)
        failover.reapplied.add(tally.reapplied)
        failover.rotationsReapplied.add(tally.rotations)
        failover.revokedAfterChange.add(tally.ended)
    }

    private func reapply(_ key: SessionKey, _ tally: inout FailoverTally) throws {
        guard let failover else { return }
        try failover.serialized(key) {
            guard let (committed, replaced) = failover.committed(key, now: clock.now()) else {
                tally.gone += 1
                return
            }
            let (d, over) = try store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: lockTimeout, reapplying: true) { row in
                let d = FailoverReapply.decide(row, committed: committed, replaced: replaced)
                return (d.write, d.revoke, (d, row))
            }
            tally.checked += 1
            switch d.verdict {
            case .current: tally.current += 1
            case .movedOn: tally.movedOn += 1
            case .ended:
                tally.ended += 1
                cache.remove(key)
            case .reapplied:
                tally.reapplied += 1
                if FailoverReapply.isRotation(committed, replaced: replaced) { tally.rotations += 1 }
            }
            if let w = d.write {
                failover.record(w, over: over, now: clock.now())
                w.state == .active ? cache.put(w, now: clock.now()) : cache.remove(key)
                events(LogLine(tenant: key.tenant, client: w.client, session: key.id, event: RefreshEvent(.warn, "refresh_reapplied",
                    "the new database server lacked a write this replica committed (version \(committed.version), found \(over.version)); re-applied")))
            }
        }
    }
}
