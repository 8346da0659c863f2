import Synchronization

/// TraceIDs draws trace and span ids for requests: unique, not secret (W3C Trace Context asks
/// for uniqueness), so no system call per request — SplitMix64 over a per-process random seed
/// and a counter, the same in spirit as the request ids.
struct TraceIDs: RandomNumberGenerator {
    private static let seed = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    mutating func next() -> UInt64 {
        var z = Self.seed &+ Self.counter.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
