import Synchronization

/// Histogram counts observations into fixed buckets (Prometheus semantics: cumulative `le`).
public final class Histogram: Sendable {
    public let bounds: [Double]
    private let state: Mutex<(buckets: [Int], sum: Double, count: Int)>

    public static let defaultBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public init(bounds: [Double] = Histogram.defaultBounds) {
        self.bounds = bounds
        self.state = Mutex((Array(repeating: 0, count: bounds.count), 0, 0))
    }

    public func observe(_ v: Double) {
        state.withLock { s in
            if let i = bounds.firstIndex(where: { v <= $0 }) { s.buckets[i] += 1 }
            s.sum += v
            s.count += 1
        }
    }

    /// Cumulative counts per bound, the sum and the total count.
    public var snapshot: (cumulative: [Int], sum: Double, count: Int) {
        state.withLock { s in
            var running = 0
            return (s.buckets.map { running += $0; return running }, s.sum, s.count)
        }
    }
}
