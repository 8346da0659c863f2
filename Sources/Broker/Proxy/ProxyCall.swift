import BrokerCore

/// ProxyCall is one API call a worker sent through the broker: whose credentials it carries,
/// and the request as the worker made it (its path under the upstream's base, its query, its
/// headers in order, its body as it arrives).
public struct ProxyCall: Sendable {
    public var tenant: String
    public var target: ProxyTarget
    public var method: String
    /// The path after the proxy route's prefix, percent-encoding as sent.
    public var tail: String
    /// The raw query, without `?`; nil when there is none.
    public var query: String?
    public var headers: [(name: String, value: String)]
    /// Nil: a request without a body.
    public var body: (any ByteSource)?

    public init(tenant: String, target: ProxyTarget, method: String, tail: String, query: String?,
                headers: [(name: String, value: String)], body: (any ByteSource)?) {
        self.tenant = tenant
        self.target = target
        self.method = method
        self.tail = tail
        self.query = query
        self.headers = headers
        self.body = body
    }
}
