import Foundation

/// RefreshFlight is the refresh driver's loop as a state machine: which of the refresh
/// machine's steps runs next, and how its start is guarded. It does no I/O and reads no clock:
/// the driver (RefreshDriver) performs each action and reports what came of it, and the flight
/// answers with the next action, until `.end`.
///
/// A flight is at most `maxStarts` starts. A start is decided on the row and guarded by one of
/// two means, which protect the same invariant — one attempt recorded at a time, so a refresh
/// token is never presented twice:
/// - **The compare-and-set** (`.compareAndSet`): the timer's first start, decided on the row as
///   its tick read it (or as read now) and written only if the row's version has not moved since
///   (every write bumps it). Two replicas deciding on the same row cannot both write: the loser
///   sees `refreshBusy` and its timer follows the winner's announcement. It costs one statement
///   and no lock; it is used where losing is cheap (a timer that fires again) and only for the
///   starts that write a row the machine built (an attempt, an idle session's rest).
/// - **The advisory lock** (`.lock`): every other start — on-demand, a timer's later start,
///   stops and resolutions (state changes, evidence to weigh) — decided on the row re-read under
///   the session's cross-replica lock, in a short transaction. A caller queues for it up to the
///   lock timeout; a timer only tries it (timeout 0).
/// An attempt's outcome is written the same way: over the row this flight wrote (compare-and-set)
/// while nobody wrote since, else under the lock — the driver decides that, not the flight.
///
/// Waits for another replica's attempt (`waitForNotice`) do not count as starts; they end at the
/// flight's deadline (the lock timeout for a caller, none for a timer).
public struct RefreshFlight: Sendable {
    public static let maxStarts = 4

    /// How a start is decided and guarded.
    public enum Guard: Sendable, Equatable {
        /// On the row as read, written only if its version has not moved since.
        case compareAndSet
        /// Under the session's advisory lock, queuing for it at most `timeout` (0: try once).
        case lock(timeout: TimeInterval)
    }

    public enum Action: Sendable, Equatable {
        /// An IdP answer this replica holds for the session still waits for the database: it is
        /// the truth, and goes first.
        case writeHeldAnswer
        /// Decide the refresh machine's start and write it.
        case start(Guard)
        /// Another replica's attempt is in flight: wait for its commit notice, at most until `until`.
        case waitForNotice(until: Date)
        /// The attempt is committed: present `refreshToken` once, then write what came of it.
        case present(write: Session, attempt: RefreshAttempt, refreshToken: String)
        /// Resolve `attempt` from evidence (introspection of `presented`), never by presenting again.
        case resolve(RefreshAttempt, presented: String?)
        /// The flight is over.
        case end(Ending)
    }

    /// How a flight ended, for its callers, the timer, the cache and the metrics.
    public struct Ending: Sendable, Equatable {
        public var result: Result<Session, BrokerError>
        /// Whether this flight refreshed the session (else it found it fresh, idle or failing).
        public var refreshed: Bool
        /// When it did not refresh: the instant before which the IdP must not be called.
        public var retryAt: Date?
        /// The refresh outcome counted (`ok`, `skipped`, `idle`, `needs_reauth`, `client_rejected`,
        /// `unresolved`, `failed`); nil counts none.
        public var outcome: String?
        /// A caller found the session busy elsewhere (lock contention).
        public var contention: Bool
        /// The log line the ending deserves.
        public var event: RefreshEvent?
        /// A row written by the flight that answers the next callers from memory.
        public var keep: Session?

        public init(result: Result<Session, BrokerError>, refreshed: Bool = false, retryAt: Date? = nil, outcome: String? = nil,
                    contention: Bool = false, event: RefreshEvent? = nil, keep: Session? = nil) {
            self.result = result
            self.refreshed = refreshed
            self.retryAt = retryAt
            self.outcome = outcome
            self.contention = contention
            self.event = event
            self.keep = keep
        }
    }

    /// What started the flight. A caller's `seenVersion` moves to the row a retried attempt
    /// wrote (`resolved`): that write refreshed nothing, and a forced refresh must not take it
    /// for somebody else's refresh and serve the token it asked to replace.
    public private(set) var trigger: RefreshTrigger
    /// Waits for other replicas end here.
    public let deadline: Date
    public let lockTimeout: TimeInterval
    public private(set) var starts = 0
    /// The attempt this flight presented, and the token it presented.
    private var sent: (attempt: RefreshAttempt, token: String)? = nil

    public init(_ trigger: RefreshTrigger, now: Date, lockTimeout: TimeInterval) {
        self.trigger = trigger
        self.lockTimeout = lockTimeout
        self.deadline = now.addingTimeInterval(trigger == .due ? 0 : lockTimeout)
    }

    /// The first action; `holdingAnswer` when an answer of this replica waits for the database.
    public mutating func begin(holdingAnswer: Bool) -> Action {
        holdingAnswer ? .writeHeldAnswer : nextStart()
    }

    /// The held answer was written (or found moot), or the database still refuses it.
    public mutating func heldAnswerWritten(stored: Bool) -> Action {
        stored ? nextStart() : .end(Ending(result: .failure(.storeUnavailable)))
    }

    /// The compare-and-set start found a start it does not write (a stop, a resolution): the
    /// same start under the lock, tried once.
    public mutating func compareAndSetDeclined() -> Action { .start(.lock(timeout: 0)) }

    /// The start could not be decided or written: the lock was busy, the row moved under a
    /// compare-and-set, the store failed.
    public mutating func startFailed(_ e: BrokerError) -> Action {
        .end(Ending(result: .failure(e), contention: e == .refreshBusy && trigger != .due))
    }

    /// The failover fence (FailoverFence) holds refreshes until `until`: the flight ends
    /// without starting, and the timer looks again then.
    public mutating func held(until: Date) -> Action {
        .end(Ending(result: .failure(.storeUnavailable), retryAt: until))
    }

    /// The refresh machine's start, decided on `row` and written.
    public mutating func started(_ start: RefreshStart, row: Session, now: Date) -> Action {
        switch start {
        case .serve(let s):
            return .end(Ending(result: .success(s), outcome: "skipped"))
        case .rest(let s):
            return .end(Ending(result: .success(s), outcome: "idle"))
        case .stop(let written, let e):
            let event = written.map { RefreshEvent(.warn, $0.reason ?? "needs_reauth", "the session has nothing to refresh with; it needs a new sign-in") }
            return .end(Ending(result: .failure(e), event: event))
        case .wait(let until, let e):
            let demand = trigger != .due
            if demand, e == .refreshBusy, now < deadline {
                starts -= 1   // a wait is not a start
                return .waitForNotice(until: min(until, deadline))
            }
            return .end(Ending(result: .failure(e), retryAt: until, contention: demand && e == .refreshBusy))
        case .resolve(let attempt):
            return .resolve(attempt, presented: row.refreshToken)
        case .send(let write, let attempt, let token):
            sent = (attempt, token)
            return .present(write: write, attempt: attempt, refreshToken: token)
        }
    }

    /// The wait for another replica's attempt is over (a notice, or its time ran out).
    public mutating func noticed() -> Action { nextStart() }

    /// What came of presenting the token was written.
    public mutating func answered(_ f: RefreshFinish) -> Action {
        if f.next == .resolve, let sent { return .resolve(sent.attempt, presented: sent.token) }
        return resolved(f)
    }

    /// The attempt was resolved (or its outcome written): start again, or end.
    public mutating func resolved(_ f: RefreshFinish) -> Action {
        guard f.next == .again else { return .end(Self.ending(f)) }
        if case .demand(_, let need) = trigger, let written = f.write { trigger = .demand(seenVersion: written.version, need: need) }
        return nextStart()
    }

    private mutating func nextStart() -> Action {
        guard starts < Self.maxStarts else { return .end(Ending(result: .failure(.refreshBusy))) }
        starts += 1
        if trigger == .due { return .start(starts == 1 ? .compareAndSet : .lock(timeout: 0)) }
        return .start(.lock(timeout: lockTimeout))
    }

    /// A written outcome as the flight's ending.
    public static func ending(_ f: RefreshFinish) -> Ending {
        let keep = f.write.flatMap { $0.state == .active ? $0 : nil }
        switch f.result {
        case .success(let s):
            return Ending(result: .success(s), refreshed: true, outcome: "ok", keep: keep)
        case .failure(let e):
            let outcome: String
            switch e {
            case .sessionNotActive: outcome = "needs_reauth"
            case .idpRejectedClient: outcome = "client_rejected"
            case .refreshBusy: outcome = "unresolved"
            default: outcome = "failed"
            }
            return Ending(result: .failure(e), retryAt: f.write?.backoffUntil ?? f.write?.nextRefreshAt, outcome: outcome, keep: keep)
        }
    }
}
