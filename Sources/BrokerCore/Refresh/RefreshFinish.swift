import Foundation

/// RefreshFinish is what the refresh machine decides once an attempt's outcome (or evidence
/// about a lost one) is known, under the session's lock with the row re-read.
public struct RefreshFinish: Sendable, Equatable {
    /// What the driver does next.
    public enum Next: Sendable, Equatable {
        /// The flight is over.
        case done
        /// The outcome is ambiguous: gather evidence (introspection) and resolve the attempt.
        case resolve
        /// The attempt is resolved as "not acted on": start again (a new attempt).
        case again
    }

    /// How the client's IdP fared, for its circuit.
    public enum Health: Sendable, Equatable {
        case unchanged
        case ok
        case failed(retryAfter: Int?)
        /// The IdP refused the client itself (its authentication): the circuit opens like after
        /// a failure and answers `error` until it closes — by a probe that succeeds, or at once
        /// when the registration changes.
        case refused(BrokerError)
    }

    /// The row to write (its version bumped by one), or nil to leave it.
    public var write: Session?
    /// Refresh tokens that were received and must be revoked at the IdP through the outbox, in
    /// the same transaction: a received token is stored or revoked, never dropped.
    public var revoke: [String]
    /// What the flight's callers get.
    public var result: Result<Session, BrokerError>
    public var next: Next
    public var health: Health
    /// The one log line this transition deserves, if any.
    public var event: RefreshEvent?

    public init(write: Session? = nil, revoke: [String] = [], result: Result<Session, BrokerError>, next: Next = .done,
                health: Health = .unchanged, event: RefreshEvent? = nil) {
        self.write = write
        self.revoke = revoke
        self.result = result
        self.next = next
        self.health = health
        self.event = event
    }
}

/// RefreshEvent is a log line about a session's refresh: a level, a machine-readable code and a
/// generic message (never a token, never an IdP body).
public struct RefreshEvent: Sendable, Equatable {
    public enum Level: String, Sendable { case info, warn, error }
    public let level: Level
    public let code: String
    public let message: String

    public init(_ level: Level, _ code: String, _ message: String) {
        self.level = level
        self.code = code
        self.message = message
    }
}
