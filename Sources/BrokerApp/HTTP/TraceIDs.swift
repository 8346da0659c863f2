import Synchronization

/// TraceIDs hands each request a seed its trace and span ids are drawn from (SplitMix64):
/// unique, not secret (W3C Trace Context asks for uniqueness), so no system call per request —
/// a per-process random base and a counter, as the request ids are made.
enum TraceIDs {
    private static let base = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    static func seed() -> UInt64 { base ^ (counter.add(1, ordering: .relaxed).newValue &* 0xD6E8_FEB8_6659_FD93) }
}
