/// ReplicationReading is what the broker can read about how the primary it writes to replicates
/// its commits: two settings of its own sessions, and the primary's walsenders
/// (`pg_stat_replication`), which a role without `pg_read_all_stats` may see without their
/// state.
public struct ReplicationReading: Sendable, Equatable {
    /// `synchronous_commit` as it applies to the broker's transactions (on, remote_apply,
    /// remote_write, local, off).
    public var synchronousCommit: String
    /// `synchronous_standby_names` ("" when no standby is synchronous).
    public var synchronousStandbyNames: String
    /// Standbys streaming from the primary, as far as the broker may see them.
    public var standbys: [Standby]
    /// The server answered from recovery (a standby): the broker is not on a primary.
    public var inRecovery: Bool

    /// One walsender: the standby's `application_name` and its `sync_state` (sync, quorum,
    /// potential, async), both nil when the broker's role may not see them.
    public struct Standby: Sendable, Equatable {
        public var name: String?
        public var syncState: String?

        public init(name: String?, syncState: String?) {
            self.name = name
            self.syncState = syncState
        }
    }

    public init(synchronousCommit: String, synchronousStandbyNames: String, standbys: [Standby], inRecovery: Bool = false) {
        self.synchronousCommit = synchronousCommit
        self.synchronousStandbyNames = synchronousStandbyNames
        self.standbys = standbys
        self.inRecovery = inRecovery
    }
}
