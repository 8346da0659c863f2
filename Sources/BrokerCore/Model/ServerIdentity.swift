import Foundation

/// ServerIdentity names the PostgreSQL server lineage a connection is on: the cluster's system
/// identifier (`pg_control_system()`, shared by a primary and every standby made from it) and
/// the timeline it writes on. A promotion starts a new timeline, so a failover or switchover
/// shows as a new timeline with the same system identifier; a restart of the same primary
/// keeps both. Commits acknowledged on one timeline may be missing on the next one
/// (asynchronous replication): that is what a change of identity warns of.
public struct ServerIdentity: Sendable, Equatable, CustomStringConvertible {
    /// The cluster's system identifier (decimal), nil when it could not be read.
    public let systemID: String?
    public let timeline: Int

    public init(systemID: String?, timeline: Int) {
        self.systemID = systemID
        self.timeline = timeline
    }

    /// Whether writes acknowledged on `other` may be missing here: another timeline, or another
    /// cluster altogether. An identifier that could not be read on either side is not compared.
    public func isOtherServer(than other: ServerIdentity) -> Bool {
        if let a = systemID, let b = other.systemID, a != b { return true }
        return timeline != other.timeline
    }

    public var description: String { "system \(systemID ?? "unknown"), timeline \(timeline)" }
}
