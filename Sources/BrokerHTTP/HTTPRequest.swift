/// HTTPRequest is a fully received request: headers and body are complete when a handler sees it.
public struct HTTPRequest: Sendable {
    public let method: String
    public let path: String
    /// Query arguments, percent-decoded, in order.
    public let query: [(name: String, value: String)]
    /// The headers named in HTTPServerConfig.headers that were sent, names lowercase.
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]
    /// The caller's X-Request-Id when it is sane, else a fresh one.
    public let requestID: String
    /// True when the body exceeded the server's limit; `body` is then empty.
    public var bodyTooLarge = false
    /// Why the front door refuses the request's framing or target (FrontDoor): it is answered
    /// 400 and its connection closed, whatever its route.
    public var refusal: String?
    /// On an mTLS listener: the SHA-256 (lowercase hex) of the client certificate, verified
    /// against the listener's CA bundle. Nil: none presented (or plain HTTP).
    public var clientCertificateSHA256: String?
    /// On an mTLS listener: why the connection's client certificate is refused (none where one
    /// is required, or one that does not verify): answered 401 whatever the route.
    public var certificateRefusal: String?
    /// Path parameters filled in by the router.
    public var parameters: [String: String] = [:]
    /// Where this request's W3C Trace Context span ids come from (set by the dispatcher): the
    /// ids are drawn from it only when a log line or an IdP call needs them, so a request served
    /// from memory pays one counter increment.
    public var traceSeed: UInt64 = 0

    public init(method: String, path: String, query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)] = [], body: [UInt8] = [], requestID: String) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
    }

    /// The first header named `name` (lowercase).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    public subscript(param name: String) -> String { parameters[name] ?? "" }
}
