/// ReplicationWatch follows the replication mode from reading to reading and says when it is
/// worth a log line: the first reading, and any later one whose mode or number of synchronous
/// standbys differs (a failover to a server replicated otherwise, a standby lost or back).
/// A failed reading changes nothing: the last known mode stands.
public struct ReplicationWatch: Sendable {
    /// What to say about a reading, once.
    public struct Report: Sendable, Equatable {
        public let mode: ReplicationMode
        public let synchronousStandbys: Int?
        public let previous: ReplicationMode?
        public let reading: ReplicationReading

        /// A commit acknowledged now may be missing after a failover.
        public var lossy: Bool { mode != .synchronous }
    }

    public private(set) var last: Report?

    public init() {}

    /// Takes `reading`; returns the report to log when it is the first or a change.
    public mutating func observe(_ reading: ReplicationReading) -> Report? {
        let (mode, count) = ReplicationMode.of(reading)
        let report = Report(mode: mode, synchronousStandbys: count, previous: last?.mode, reading: reading)
        defer { last = report }
        guard let last else { return report }
        return last.mode != mode || last.synchronousStandbys != count ? report : nil
    }
}
