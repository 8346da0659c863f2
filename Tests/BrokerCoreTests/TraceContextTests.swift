import BrokerCore
import Testing

@Suite("W3C Trace Context: traceparent")
struct TraceContextTests {
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736", parent = "00f067aa0ba902b7"

    @Test("a valid traceparent is continued in a new span; the flags pass on")
    func continued() {
        var rng = SystemRandomNumberGenerator()
        let t = TraceContext.entering("00-\(trace)-\(parent)-01", using: &rng)
        #expect(t.traceID == trace && t.spanID != parent && t.spanID.count == 16 && t.flags == "01")
        #expect(t.traceparent == "00-\(trace)-\(t.spanID)-01")
    }

    @Test("refused (a new trace starts): upper-case hex, all-zero ids, version ff, a wrong length, bad separators")
    func refused() {
        for bad in ["00-\(trace.uppercased())-\(parent)-01", "00-\(String(repeating: "0", count: 32))-\(parent)-01",
                    "00-\(trace)-0000000000000000-01", "ff-\(trace)-\(parent)-01", "00-\(trace)-\(parent)-01-extra",
                    "00-\(trace)-\(parent)-1", "00_\(trace)-\(parent)-01", "", "garbage"] {
            #expect(TraceContext.parse(bad) == nil, "\(bad)")
        }
        var rng = SystemRandomNumberGenerator()
        let fresh = TraceContext.entering("00-\(trace.uppercased())-\(parent)-01", using: &rng)
        #expect(fresh.traceID != trace.uppercased() && fresh.traceID.count == 32 && fresh.flags == "00")
    }

    @Test("a later version may carry more fields after a dash, which are ignored")
    func laterVersion() {
        #expect(TraceContext.parse("01-\(trace)-\(parent)-01-what-comes-later")?.traceID == trace)
        #expect(TraceContext.parse("01-\(trace)-\(parent)-01x") == nil)
    }

    @Test("a request's span is drawn from its seed: the same seed, the same ids; another seed, others")
    func seeded() {
        let a = TraceContext.entering(nil, seed: 7), b = TraceContext.entering(nil, seed: 7), c = TraceContext.entering(nil, seed: 8)
        #expect(a == b && a.traceID != c.traceID && a.spanID != c.spanID && a.traceID.count == 32 && a.spanID.count == 16)
        let continued = TraceContext.entering("00-\(trace)-\(parent)-01", seed: 7)
        #expect(continued.traceID == trace && continued == TraceContext.entering("00-\(trace)-\(parent)-01", seed: 7))
    }
}
