import BrokerCore
import Synchronization

/// ReplicationMonitor reads the primary's replication mode at start and every `period`
/// (a background loop), keeps the last report for GET /metrics (a scrape runs no SQL), and
/// hands `report` one line's worth when the mode is first known and whenever it changes.
/// Thread-safe.
public final class ReplicationMonitor: Sendable {
    /// How often the mode is read again: a failover to a server replicated otherwise shows
    /// within this.
    public static let period: Double = 30

    let probe: any ReplicationProbe
    let report: @Sendable (ReplicationWatch.Report) -> Void
    private let watch = Mutex(ReplicationWatch())

    public init(probe: any ReplicationProbe, report: @escaping @Sendable (ReplicationWatch.Report) -> Void) {
        self.probe = probe
        self.report = report
    }

    /// The last mode read, nil before the first reading.
    public var last: ReplicationWatch.Report? { watch.withLock { $0.last } }

    /// Reads the mode once; a failed read keeps the last one (and is the loop's failure).
    public func check() throws {
        let reading = try probe.replication()
        if let r = watch.withLock({ $0.observe(reading) }) { report(r) }
    }
}
