/// ReplicationProbe reads how the primary the broker writes to replicates (see
/// `ReplicationReading`). Server-wide: no tenant's data is read. Thread-safe.
public protocol ReplicationProbe: Sendable {
    func replication() throws -> ReplicationReading
}
