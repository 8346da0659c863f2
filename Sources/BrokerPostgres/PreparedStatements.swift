import Foundation
import Synchronization

/// PreparedStatements is the switch a pool's connections share: whether key lookups are
/// prepared (`PGConnection.Plan.keyLookup`). It starts as configured
/// (TOKENBROKER_DB_PREPARED_STATEMENTS) and turns off for good, never on again, the first time
/// PostgreSQL answers as it does through a transaction pooler that does not carry prepared
/// statements between server connections (PgBouncer before 1.21, or with
/// `max_prepared_statements = 0`): a statement prepared by another client on the server
/// connection this one was handed (42P05, "already exists"), or one this client prepared on
/// another (26000, "does not exist").
///
/// Thread-safety: every method may be called from any thread.
public final class PreparedStatements: Sendable {
    private let on: Atomic<Bool>
    private let off = Atomic<Bool>(false)
    private let switchedOff: @Sendable (PGError) -> Void

    /// `switchedOff` hears of the error that turned them off, once (the composition root logs it).
    public init(_ enabled: Bool, switchedOff: @escaping @Sendable (PGError) -> Void = { _ in }) {
        on = Atomic(enabled)
        self.switchedOff = switchedOff
    }

    /// Whether statements are prepared now.
    public var enabled: Bool { on.load(ordering: .relaxed) }

    /// Whether a pooler's answer turned them off (they were configured on).
    public var switchedOffByPooler: Bool { off.load(ordering: .relaxed) }

    /// Whether `error` is the answer of a transaction pooler that lost a prepared statement.
    static func isPoolerLoss(_ error: PGError) -> Bool { error.sqlstate == "42P05" || error.sqlstate == "26000" }

    /// Turns them off after `error`; only the first call reports it.
    func turnOff(after error: PGError) {
        on.store(false, ordering: .relaxed)
        guard off.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        switchedOff(error)
    }
}
