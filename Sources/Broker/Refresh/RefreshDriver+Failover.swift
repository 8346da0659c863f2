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
        var left = failover.entries(now: began)
        while !left.isEmpty {
            guard failover.epoch == epoch else { return nil }
            var again: [SessionKey] = []
            for key in left {
                do {
                    try reapply(key, &tally)
                } catch {
                    if case .notFound = brokerError(error, key, doing: "a re-application after a change of database server") {
                        tally.gone += 1
                    } else {
                        again.append(key)
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
        events(LogLine(tenant: "", client: "", session: nil, event: RefreshEvent(tally.reapplied + tally.ended > 0 ? .warn : .info, "failover_reapplied",
            "after the change of database server, \(tally.reapplied) of the \(tally.checked) writes this replica committed lately were missing "
                + "and were re-applied (\(tally.rotations) refresh-token rotations); \(tally.current) were there, \(tally.movedOn) superseded, "
                + "\(tally.ended) on sessions that ended meanwhile (their refresh tokens revoked), \(tally.gone) on sessions gone; \(ms) ms")))
        failover.reconciled(epoch: epoch)
        return tally
    }

    private func reapply(_ key: SessionKey, _ tally: inout FailoverTally) throws {
        guard let failover else { return }
        try failover.serialized(key) {
            guard let (committed, replaced) = failover.committed(key, now: clock.now()) else {
                tally.gone += 1
                return
            }
            let (d, over) = try store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: lockTimeout) { row in
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
                if replaced != nil { tally.rotations += 1 }
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
