import Synchronization

/// Counter is a monotonically increasing count, safe from any thread.
public final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    public func add(_ n: Int = 1) { value.add(n, ordering: .relaxed) }
    public var count: Int { value.load(ordering: .relaxed) }
}

/// LabeledCounter counts by a label value (an outcome, or a tenant, client and outcome). Its
/// labels must come from a bounded set: outcomes, registered clients.
public final class LabeledCounter<Label: Hashable & Sendable>: Sendable {
    private let values = Mutex<[Label: Int]>([:])
    public init() {}
    public func add(_ label: Label, _ n: Int = 1) { values.withLock { $0[label, default: 0] += n } }
    public var counts: [Label: Int] { values.withLock { $0 } }
}
