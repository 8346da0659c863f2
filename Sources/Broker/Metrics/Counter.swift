import Synchronization

/// Counter is a monotonically increasing count, safe from any thread.
public final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    public func add(_ n: Int = 1) { value.add(n, ordering: .relaxed) }
    public var count: Int { value.load(ordering: .relaxed) }
}

/// LabeledCounter counts by one label value (an outcome).
public final class LabeledCounter: Sendable {
    private let values = Mutex<[String: Int]>([:])
    public init() {}
    public func add(_ label: String, _ n: Int = 1) { values.withLock { $0[label, default: 0] += n } }
    public var counts: [String: Int] { values.withLock { $0 } }
}
