import Foundation

/// RefreshContext is everything a refresh decision reads besides the row: the clock, the
/// client's policies, and the random draws (arguments, so that tests choose them).
public struct RefreshContext: Sendable, Equatable {
    public var now: Date
    public var policy: RefreshPolicy
    public var retry: RetryPolicy
    /// How long an IdP call may take before its owner gives up waiting; an attempt nobody
    /// resolved is left alone until `patience + RefreshMachine.margin` after it started.
    public var patience: TimeInterval
    public var onAmbiguous: AmbiguousRefreshPolicy
    /// The client's circuit is open until then (no IdP call before), or nil.
    public var blockedUntil: Date?
    /// What callers get while the circuit is open, when the IdP refused the client (nil: an
    /// outage, `idp_unavailable`).
    public var blockedWith: BrokerError?
    /// Uniform in 0...1: the backoff draw.
    public var draw: Double
    /// Uniform in -1...1: the schedule's jitter.
    public var jitter: Double
    /// What the client's provider does with its grants (rotating or reusable refresh tokens,
    /// tokens that never expire) and how its refusals are read (its descriptor).
    public var grant: GrantLifetime
    public var refusals: RefusalCodes
    /// The client presents a TLS certificate to its provider (RFC 8705): the access tokens it
    /// gets may be bound to it, and are read for `cnf.x5t#S256` (CertificateBinding).
    public var presentsCertificate = false

    public init(now: Date, policy: RefreshPolicy = RefreshPolicy(), retry: RetryPolicy = RetryPolicy(), patience: TimeInterval = 120,
                onAmbiguous: AmbiguousRefreshPolicy = .failClosed, blockedUntil: Date? = nil, blockedWith: BrokerError? = nil, draw: Double = 1,
                jitter: Double = 0, grant: GrantLifetime = GrantLifetime(), refusals: RefusalCodes = RefusalCodes()) {
        self.now = now
        self.policy = policy
        self.retry = retry
        self.patience = patience
        self.onAmbiguous = onAmbiguous
        self.blockedUntil = blockedUntil
        self.blockedWith = blockedWith
        self.draw = draw
        self.jitter = jitter
        self.grant = grant
        self.refusals = refusals
    }
}
