import Broker
import BrokerCore
import Synchronization

/// RequestMetrics times every request by route and status class
/// (`tokenbroker_http_request_duration_seconds`). Routes are the router's patterns, a bounded
/// set; a request no route matched is counted under `unmatched`. Counts are kept per HTTP
/// thread (PerThread) and merged when read: one histogram Mutex shared by every thread is a
/// futex call per few requests on the token path.
public final class RequestMetrics: Sendable {
    public static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// One stripe's counts: per slot (route and status class), a count per bound and beyond
    /// the last, the sum, the total.
    struct Counts: Sendable {
        var buckets: [Int] = []
        var sums: [Double] = []
        var totals: [Int] = []
    }

    private let stripes = PerThread(stripes: 8) { Counts() }
    private let table = Mutex<[(method: String, pattern: String)]>([])

    public init() {}

    /// The router's table, whose indexes `observe` receives.
    func name(_ routes: [(method: String, pattern: String)]) { table.withLock { $0 = routes } }

    func observe(route: Int?, status: Int, seconds: Double) {
        let slot = ((route ?? -1) + 1) * 5 + min(max(status / 100, 1), 5) - 1
        let bucket = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        let width = Self.bounds.count + 1
        stripes.withLock { c in
            if c.totals.count <= slot {
                c.totals += Array(repeating: 0, count: slot + 1 - c.totals.count)
                c.sums += Array(repeating: 0, count: slot + 1 - c.sums.count)
                c.buckets += Array(repeating: 0, count: (slot + 1) * width - c.buckets.count)
            }
            c.buckets[slot * width + bucket] += 1
            c.sums[slot] += seconds
            c.totals[slot] += 1
        }
    }

    /// Each series' method, route pattern, status class ("2xx") and cumulative histogram.
    var series: [(method: String, route: String, status: String, histogram: (cumulative: [Int], sum: Double, count: Int))] {
        var merged = Counts()
        let width = Self.bounds.count + 1
        stripes.forEach { c in
            if merged.totals.count < c.totals.count {
                merged.totals += Array(repeating: 0, count: c.totals.count - merged.totals.count)
                merged.sums += Array(repeating: 0, count: c.sums.count - merged.sums.count)
                merged.buckets += Array(repeating: 0, count: c.buckets.count - merged.buckets.count)
            }
            for i in c.totals.indices { merged.totals[i] += c.totals[i]; merged.sums[i] += c.sums[i] }
            for i in c.buckets.indices { merged.buckets[i] += c.buckets[i] }
        }
        let routes = table.withLock { $0 }
        var out: [(method: String, route: String, status: String, histogram: (cumulative: [Int], sum: Double, count: Int))] = []
        for slot in merged.totals.indices where merged.totals[slot] > 0 {
            let route = slot / 5 - 1, statusClass = slot % 5 + 1
            let r = routes.indices.contains(route) ? routes[route] : (method: "", pattern: "unmatched")
            var running = 0
            let cumulative = (0..<Self.bounds.count).map { b -> Int in running += merged.buckets[slot * width + b]; return running }
            out.append((r.method, r.pattern, "\(statusClass)xx", (cumulative, merged.sums[slot], merged.totals[slot])))
        }
        return out.sorted { ($0.route, $0.method, $0.status) < ($1.route, $1.method, $1.status) }
    }
}
