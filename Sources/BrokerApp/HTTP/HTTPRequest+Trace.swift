import BrokerCore
import BrokerHTTP

extension HTTPRequest {
    /// The request's span, as the dispatcher set it (nil before).
    var trace: TraceContext? {
        guard let t = traceID, let s = spanID else { return nil }
        return TraceContext(traceID: t, spanID: s, flags: traceFlags)
    }
}
