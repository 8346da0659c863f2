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
    public private(set) var server: ServerIdentity?
    public private(set) var epoch = 0
    /// When the last change was noticed (nil: none since start).
    public private(set) var changedAt: Date?
    /// The epoch whose re-application is done.
    private var reconciledEpoch = 0

    public init(hold: TimeInterval) { self.hold = hold }

    /// An identity read on a connection at `now`.
    public mutating func observe(_ identity: ServerIdentity, now: Date) -> Observation {
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
        return .changed(from: was)
    }

    /// The re-application started for `epoch` is done (a later change needs its own).
    public mutating func reconciled(epoch e: Int) {
        reconciledEpoch = max(reconciledEpoch, min(e, epoch))
    }

    /// Whether the re-application for the current epoch is done.
    public var isReconciled: Bool { reconciledEpoch == epoch }

    /// Until when refreshes are held at `now`: nil when they may go; `.distantFuture` while the
    /// re-application is still running (its end opens the fence, if the hold has passed).
    public func heldUntil(now: Date) -> Date? {
        guard let changedAt else { return nil }
        if !isReconciled { return .distantFuture }
        let end = changedAt.addingTimeInterval(hold)
        return now < end ? end : nil
    }
}
