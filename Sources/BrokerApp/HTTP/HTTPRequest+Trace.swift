import BrokerCore
import BrokerHTTP

extension HTTPRequest {
    /// The request's span: the caller's `traceparent` continued, or a new trace — drawn from
    /// `traceSeed`, so every use for one request gives the same ids.
    var trace: TraceContext { TraceContext.entering(header("traceparent"), seed: traceSeed) }
}
