import Foundation

/// ReplicationMode is what a commit the broker was told about survives: the decision, from a
/// `ReplicationReading`, of whether a failover can lose it.
///
/// Only `synchronous` means that every acknowledged commit (a rotated refresh token) is also on
/// a standby, so that promoting that standby loses none. Every other mode can lose the last
/// commits to a failover — or, for `synchronousUnavailable`, makes every commit wait.
public enum ReplicationMode: String, Sendable, CaseIterable {
    /// Commits wait for at least one connected synchronous (or quorum) standby.
    case synchronous
    /// Synchronous standbys are configured and commits wait for them, but none is connected:
    /// writes hang until one is (or until the setting is cleared).
    case synchronousUnavailable = "synchronous_unavailable"
    /// Standbys stream, but commits do not wait for them.
    case asynchronous
    /// No standby streams from this server (a single server, or a provider's replication the
    /// broker cannot see).
    case standalone
    /// The broker may see that standbys exist, not their state.
    case unknown

    /// The mode `r` shows, and how many standbys acknowledge commits before they return (nil
    /// when that cannot be known).
    public static func of(_ r: ReplicationReading) -> (mode: ReplicationMode, synchronousStandbys: Int?) {
        // With `local` or `off` a commit returns before any standby has it, whatever the names.
        let waits = !r.synchronousStandbyNames.trimmingCharacters(in: .whitespaces).isEmpty
            && !["local", "off"].contains(r.synchronousCommit.lowercased())
        let hidden = r.standbys.contains { $0.syncState == nil }
        let synchronous = r.standbys.filter { ["sync", "quorum"].contains($0.syncState?.lowercased() ?? "") }.count
        if r.standbys.isEmpty { return waits ? (.synchronousUnavailable, 0) : (.standalone, 0) }
        if !waits { return (.asynchronous, 0) }
        if synchronous > 0 { return (.synchronous, synchronous) }
        return hidden ? (.unknown, nil) : (.synchronousUnavailable, 0)
    }
}
