import Synchronization

/// LabeledHistograms keeps one Histogram per label value (a client, a route and status class),
/// made on first use. Its labels must come from a bounded set.
public final class LabeledHistograms<Label: Hashable & Sendable>: Sendable {
    public let bounds: [Double]
    private let histograms = Mutex<[Label: Histogram]>([:])

    public init(bounds: [Double] = Histogram.defaultBounds) { self.bounds = bounds }

    public func observe(_ label: Label, _ v: Double) {
        histograms.withLock { h in
            if let existing = h[label] { return existing }
            let made = Histogram(bounds: bounds)
            h[label] = made
            return made
        }.observe(v)
    }

    /// Each label's cumulative counts per bound, sum and count.
    public var snapshots: [Label: (cumulative: [Int], sum: Double, count: Int)] {
        histograms.withLock { $0 }.mapValues(\.snapshot)
    }
}
