/// TraceContext is a W3C Trace Context (https://www.w3.org/TR/trace-context/) position: the
/// trace a request belongs to and the span that is now its parent. A request arriving with a
/// valid `traceparent` continues that trace in a span of its own; one without starts a trace.
/// Outbound calls (the IdP's endpoints) carry `traceparent` naming this span as their parent.
public struct TraceContext: Sendable, Equatable {
    /// 32 lowercase hex digits, not all zero.
    public let traceID: String
    /// 16 lowercase hex digits, not all zero: this span.
    public let spanID: String
    /// The trace-flags byte (bit 0: sampled), passed on as received.
    public let flags: String

    /// A `traceparent` header value as §3.2 defines it, or nil: version 00 is exactly
    /// `00-<trace-id>-<parent-id>-<flags>`; a later version (not ff) may append fields after
    /// another `-`, which are ignored. Upper-case hex, all-zero ids and version ff are refused.
    public static func parse(_ header: String?) -> (traceID: String, parentID: String, flags: String)? {
        guard let h = header?.utf8, h.count >= 55 else { return nil }
        let b = Array(h)
        func hex(_ range: Range<Int>) -> Bool {
            b[range].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
        }
        guard hex(0..<2), b[2] == 0x2D, hex(3..<35), b[35] == 0x2D, hex(36..<52), b[52] == 0x2D, hex(53..<55) else { return nil }
        let version = String(decoding: b[0..<2], as: UTF8.self)
        guard version != "ff", version == "00" ? b.count == 55 : (b.count == 55 || b[55] == 0x2D) else { return nil }
        let trace = String(decoding: b[3..<35], as: UTF8.self), parent = String(decoding: b[36..<52], as: UTF8.self)
        guard trace != String(repeating: "0", count: 32), parent != String(repeating: "0", count: 16) else { return nil }
        return (trace, parent, String(decoding: b[53..<55], as: UTF8.self))
    }

    public init(traceID: String, spanID: String, flags: String) {
        (self.traceID, self.spanID, self.flags) = (traceID, spanID, flags)
    }

    /// The span of a request that sent `header`: its trace continued, or a new one (sampled
    /// flag off: the broker records no spans, it only keeps the ids in its logs and passes them on).
    public static func entering(_ header: String?, using rng: inout some RandomNumberGenerator) -> TraceContext {
        // Only the sampled bit is defined for version 00: flags of a later version are not passed on.
        if let p = parse(header) {
            let sampled = (UInt8(p.flags, radix: 16) ?? 0) & 1
            return TraceContext(traceID: p.traceID, spanID: randomHex(8, &rng), flags: sampled == 1 ? "01" : "00")
        }
        return TraceContext(traceID: randomHex(16, &rng), spanID: randomHex(8, &rng), flags: "00")
    }

    /// The `traceparent` an outbound call of this span carries.
    public var traceparent: String { "00-\(traceID)-\(spanID)-\(flags)" }

    /// The span of a request as `entering` makes it, its ids drawn from `seed` alone: the same
    /// seed gives the same span, so a request's log line and its IdP calls agree without storing it.
    public static func entering(_ header: String?, seed: UInt64) -> TraceContext {
        var rng = SplitMix64(seed: seed)
        return entering(header, using: &rng)
    }

    static func randomHex(_ bytes: Int, _ rng: inout some RandomNumberGenerator) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes * 2)
        for i in 0..<bytes {
            var byte = UInt8.random(in: .min ... .max, using: &rng)
            if i == bytes - 1, out.allSatisfy({ $0 == 0x30 }), byte == 0 { byte = 1 }   // never all zero
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
