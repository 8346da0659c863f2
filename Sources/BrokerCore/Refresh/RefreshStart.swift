import Foundation

/// RefreshStart is what the refresh machine decides under the session's lock, before any IdP
/// call: the driver performs it.
public enum RefreshStart: Sendable, Equatable {
    /// Nothing to spend: the row satisfies the caller, or (timer) its schedule moved.
    case serve(Session)
    /// Refuse, after writing `write` when given (a session found without a refresh token).
    case stop(write: Session?, BrokerError)
    /// The IdP must not be called before `until` (an attempt is in flight elsewhere, the
    /// session or its client is backing off); callers get `error` unless the cached token does.
    case wait(until: Date, BrokerError)
    /// (Timer) The session is idle and its keep-alive is not due: no IdP call; commit `write`,
    /// which moves the schedule to the keep-alive.
    case rest(write: Session)
    /// An attempt whose owner's patience has run out: resolve it without presenting the token.
    case resolve(RefreshAttempt)
    /// Commit `write` (it records `attempt`), then present `refreshToken` once.
    case send(write: Session, attempt: RefreshAttempt, refreshToken: String)
}

extension RefreshStart {
    /// The row this start writes, if any.
    public var write: Session? {
        switch self {
        case .send(let w, _, _), .stop(let w?, _), .rest(let w): w
        case .serve, .stop(nil, _), .wait, .resolve: nil
        }
    }

    /// How a start decided without the lock is written.
    public enum CompareAndSet: Sendable, Equatable {
        /// Nothing to write: it stands as decided.
        case nothing
        /// Write this row only if the row it was decided on has not moved (an attempt, a rest).
        case write(Session)
        /// A state change or a resolution (evidence to weigh): decided under the lock instead.
        case declined
    }

    /// Whether this start may be written by a compare-and-set over the row it was decided on.
    public var compareAndSet: CompareAndSet {
        switch self {
        case .serve, .wait, .stop(nil, _): .nothing
        case .send(let w, _, _), .rest(let w): .write(w)
        case .stop, .resolve: .declined
        }
    }
}
