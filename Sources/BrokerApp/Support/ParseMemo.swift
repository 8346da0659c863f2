import BrokerCore

/// ParseMemo remembers what a pure parse made of the bytes it was given lately, so that the
/// same bytes sent again are not parsed again. Workers send the same few bodies over and over
/// (`{"min_ttl":60}`): a parse allocates a document and reads the members one by one (with
/// jansson it cost more than the rest of a cached hand-out's route), a hit is a hash of a few
/// bytes, or none when they are the bytes found last (RecentDictionary). What comes back is
/// exactly what parsing those bytes returned.
///
/// Bounded: each thread's stripe (PerThread) keeps at most `capacity` inputs, each at most
/// `maxBytes` long, and starts over when full; bytes that failed to parse are never kept.
///
/// Thread-safety: any thread.
final class ParseMemo<Value: Sendable>: Sendable {
    private let stripes: PerThread<RecentDictionary<[UInt8], Value>>
    private let capacity: Int
    private let maxBytes: Int

    init(capacity: Int = 64, maxBytes: Int = 512) {
        self.capacity = capacity
        self.maxBytes = maxBytes
        stripes = PerThread(stripes: 8) { RecentDictionary() }
    }

    /// What `parse` returns for `bytes`: remembered, or parsed now (and remembered if it parsed).
    func value(_ bytes: [UInt8], parse: ([UInt8]) throws -> Value) throws -> Value {
        guard bytes.count <= maxBytes else { return try parse(bytes) }
        if let known = stripes.withLock({ $0.value(forKey: bytes) }) { return known }
        let value = try parse(bytes)
        stripes.withLock { m in
            if m.count >= capacity { m.removeAll(keepingCapacity: true) }
            m.set(bytes, value)
        }
        return value
    }
}
