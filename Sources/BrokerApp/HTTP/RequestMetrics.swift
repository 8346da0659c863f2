import Broker
import Synchronization

/// RequestMetrics times every request by route and status class
/// (`tokenbroker_http_request_duration_seconds`). Routes are the router's patterns, a bounded
/// set; a request no route matched is counted under `unmatched`.
public final class RequestMetrics: Sendable {
    struct Label: Hashable, Sendable {
        let route: Int       // the index in the router's table; -1: no route matched
        let statusClass: Int // 1…5
    }

    public static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    private let durations = LabeledHistograms<Label>(bounds: RequestMetrics.bounds)
    private let table = Mutex<[(method: String, pattern: String)]>([])

    public init() {}

    /// The router's table, whose indexes `observe` receives.
    func name(_ routes: [(method: String, pattern: String)]) { table.withLock { $0 = routes } }

    func observe(route: Int?, status: Int, seconds: Double) {
        durations.observe(Label(route: route ?? -1, statusClass: min(max(status / 100, 1), 5)), seconds)
    }

    /// Each series' method, route pattern, status class ("2xx") and histogram.
    var series: [(method: String, route: String, status: String, histogram: (cumulative: [Int], sum: Double, count: Int))] {
        let routes = table.withLock { $0 }
        return durations.snapshots.map { label, h in
            let r = routes.indices.contains(label.route) ? routes[label.route] : (method: "", pattern: "unmatched")
            return (r.method, r.pattern, "\(label.statusClass)xx", h)
        }.sorted { ($0.route, $0.method, $0.status) < ($1.route, $1.method, $1.status) }
    }
}
