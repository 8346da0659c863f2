import Foundation

/// FailoverFence decides when this replica may present refresh tokens again after its
/// connections found themselves on another PostgreSQL server (ServerIdentity): a failover
/// under asynchronous replication may have lost rotations that replicas committed on the old
/// primary, and presenting the spent token they replaced is a replay that kills the grant at
/// most IdPs. It does no I/O and reads no clock.
///
/// Why a bounded hold rather than a table of replicas: no replica knows the others' journals
/// (RotationJournal), nor even which replicas are alive (there is no registry, and a replica
/// that died took its journal with it, so waiting for it would be waiting forever). What bounds
/// the risk is time: every live replica's connections break when the primary dies, and each
/// replica also reads the server's identity every few seconds, so each finds the new server
/// within about that period of it accepting writes, and re-applies its journal at once. So after
/// a change each replica holds its refreshes (starts and presentations, not hand-outs of access
/// tokens still valid) until both its own re-application is done and `hold` has passed since it
/// noticed the change — long enough for the others to have noticed and re-applied theirs
/// (TOKENBROKER_FAILOVER_HOLD_SECONDS, above the identity probe's period).
///
/// `epoch` counts the changes seen: a refresh that passed the fence before a change and finds,
/// before presenting, that the epoch moved, does not present (its attempt may have been
/// written over a row the new server rolled back).
public struct FailoverFence: Sendable, Equatable {
    /// How an identity read compares with the server this replica was on.
    public enum Observation: Sendable, Equatable {
        /// The first identity seen: nothing to compare with.
        case first
        /// The same server (a reconnect, or a restart of the same primary).
        case same
        /// Another server: what this replica committed may be missing there.
        case changed(from: ServerIdentity)
    }

    public let hold: TimeInterval
    /// How long after a change a refresh token this replica cannot prove current is checked by
    /// introspection before it is presented (0: never).
    public let proofWindow: TimeInterval
    public private(set) var server: ServerIdentity?
    public private(set) var epoch = 0
    /// When the last change was noticed (nil: none since start).
    public private(set) var changedAt: Date?
    /// The epoch whose re-application is done.
    private var reconciledEpoch = 0
    /// When an identity was last read on the server this replica is on.
    private var lastSeen: Date?
    /// How long, in all, this replica was out of touch with its server before each change
    /// (from the last identity read on the old server to the first on the new one).
    public private(set) var outOfTouch: TimeInterval = 0

    public init(hold: TimeInterval, proofWindow: TimeInterval = 0) {
        self.hold = hold
        self.proofWindow = proofWindow
    }

    /// An identity read on a connection at `now`.
    public mutating func observe(_ identity: ServerIdentity, now: Date) -> Observation {
        defer { lastSeen = now }
        guard let was = server else {
            server = identity
            return .first
        }
        guard identity.isOtherServer(than: was) else {
            // Same lineage; keep the identifier should this read be the first to know it.
            if was.systemID == nil, identity.systemID != nil { server = identity }
            return .same
        }
        server = identity
        epoch += 1
        changedAt = now
        if let lastSeen { outOfTouch += max(0, now.timeIntervalSince(lastSeen)) }
        return .changed(from: was)
    }

    /// The time the journal (RotationJournal) ages by at `now`: the clock, less the time this
    /// replica spent out of touch with its server before a change. A write committed just
    /// before a long failover (a manual promotion, an HA engine refusing to promote for a
    /// while) is as young, when the new server is found, as it was when the old one was lost.
    public func journalTime(_ now: Date) -> Date { now.addingTimeInterval(-outOfTouch) }

    /// The re-application started for `epoch` is done (a later change needs its own).
    public mutating func reconciled(epoch e: Int) {
        reconciledEpoch = max(reconciledEpoch, min(e, epoch))
    }

    /// Whether the re-application for the current epoch is done.
    public var isReconciled: Bool { reconciledEpoch == epoch }

    /// Whether a refresh token about to be presented at `now` must first be checked by
    /// introspection (where the provider offers it): within `proofWindow` of a change, unless
    /// this replica received that very token (`tokenKnown`: its journal holds it) or the
    /// session was refreshed since the change (by anyone: the token came from the IdP after
    /// the fences opened). What is left are sessions whose last rotation may have been lost
    /// with a replica that died with the old primary: their row holds a token the IdP already
    /// replaced, and presenting it would be a replay.
    public func mustProve(lastRefreshedAt: Date?, tokenKnown: Bool, now: Date) -> Bool {
        guard proofWindow > 0, let changedAt, now < changedAt.addingTimeInterval(proofWindow), !tokenKnown else { return false }
        return (lastRefreshedAt ?? .distantPast) < changedAt
    }

    /// Whether a refresh may start at `now`, and the epoch it starts in, read together: a
    /// change between the two would let a start capture the new epoch without being held.
    public func admission(now: Date) -> (held: Date?, epoch: Int) { (heldUntil(now: now), epoch) }

    /// Whether a refresh started in `e` may present its token at `now`: the fence is open,
    /// and for that very epoch (no change since the start was decided).
    public func admits(epoch e: Int, now: Date) -> Bool { e == epoch && heldUntil(now: now) == nil }

    /// Until when refreshes are held at `now`: nil when they may go; `.distantFuture` while the
    /// re-application is still running (its end opens the fence, if the hold has passed).
    public func heldUntil(now: Date) -> Date? {
        guard let changedAt else { return nil }
        if !isReconciled { return .distantFuture }
        let end = changedAt.addingTimeInterval(hold)
        return now < end ? end : nil
    }
}
