import BrokerCore

/// HTTPRequest is a fully received request: headers and body are complete when a handler sees it.
///
/// A value type whose fields live in one shared box, copied only when a copy is changed: a
/// request is passed and captured by value several times on its way to a route, and copying a
/// dozen strings, arrays and a dictionary each time cost about a twentieth of a cached hand-out.
public struct HTTPRequest: Sendable {
    /// The fields. Changed only through `change`, on a box nobody else holds (copy on write), so
    /// no two threads ever see one box change: hence @unchecked.
    private final class Storage: @unchecked Sendable {
        let method: String, path: String
        let query: [(name: String, value: String)]
        let headers: [(name: String, value: String)]
        let body: [UInt8]
        let requestID: String
        var bodyTooLarge = false
        var refusal: String?
        var clientCertificateSHA256: String?
        var clientCertificateSubject: String?
        var certificateRefusal: String?
        var parameters = RouteParameters()
        var traceSeed: UInt64 = 0
        var bodyStream: (any ByteSource)?
        var allHeaders: [(name: String, value: String)] = []
        var rawTarget = ""

        init(method: String, path: String, query: [(name: String, value: String)], headers: [(name: String, value: String)],
             body: [UInt8], requestID: String) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.body = body
            self.requestID = requestID
        }

        func copy() -> Storage {
            let c = Storage(method: method, path: path, query: query, headers: headers, body: body, requestID: requestID)
            c.bodyTooLarge = bodyTooLarge
            c.refusal = refusal
            c.clientCertificateSHA256 = clientCertificateSHA256
            c.clientCertificateSubject = clientCertificateSubject
            c.certificateRefusal = certificateRefusal
            c.parameters = parameters
            c.traceSeed = traceSeed
            c.bodyStream = bodyStream
            c.allHeaders = allHeaders
            c.rawTarget = rawTarget
            return c
        }
    }

    private var storage: Storage

    private mutating func change(_ body: (Storage) -> Void) {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        body(storage)
    }

    public var method: String { storage.method }
    public var path: String { storage.path }
    /// Query arguments, percent-decoded, in order.
    public var query: [(name: String, value: String)] { storage.query }
    /// The headers named in HTTPServerConfig.headers that were sent, names lowercase.
    public var headers: [(name: String, value: String)] { storage.headers }
    public var body: [UInt8] { storage.body }
    /// The caller's X-Request-Id when it is sane, else a fresh one.
    public var requestID: String { storage.requestID }
    /// True when the body exceeded the server's limit; `body` is then empty.
    public var bodyTooLarge: Bool {
        get { storage.bodyTooLarge }
        set { change { $0.bodyTooLarge = newValue } }
    }
    /// Why the front door refuses the request's framing or target (FrontDoor): it is answered
    /// 400 and its connection closed, whatever its route.
    public var refusal: String? {
        get { storage.refusal }
        set { change { $0.refusal = newValue } }
    }
    /// On an mTLS listener: the SHA-256 (lowercase hex) of the client certificate, verified
    /// against the listener's CA bundle. Nil: none presented (or plain HTTP).
    public var clientCertificateSHA256: String? {
        get { storage.clientCertificateSHA256 }
        set { change { $0.clientCertificateSHA256 = newValue } }
    }
    /// On an mTLS listener: the verified client certificate's subject DN (RFC 4514 text, as
    /// GnuTLS writes it). Nil: none presented, or plain HTTP.
    public var clientCertificateSubject: String? {
        get { storage.clientCertificateSubject }
        set { change { $0.clientCertificateSubject = newValue } }
    }
    /// On an mTLS listener: why the connection's client certificate is refused (none where one
    /// is required, or one that does not verify): answered 401 whatever the route.
    public var certificateRefusal: String? {
        get { storage.certificateRefusal }
        set { change { $0.certificateRefusal = newValue } }
    }
    /// Path parameters filled in by the router.
    public var parameters: RouteParameters {
        get { storage.parameters }
        set { change { $0.parameters = newValue } }
    }
    /// Where this request's W3C Trace Context span ids come from (set by the dispatcher): the
    /// ids are drawn from it only when a log line or an IdP call needs them, so a request served
    /// from memory pays one counter increment.
    public var traceSeed: UInt64 {
        get { storage.traceSeed }
        set { change { $0.traceSeed = newValue } }
    }

    /// A streamed route's body, read as it arrives (on a worker thread, never an HTTP thread);
    /// nil when the request has none. Normal routes get `body` instead.
    public var bodyStream: (any ByteSource)? {
        get { storage.bodyStream }
        set { change { $0.bodyStream = newValue } }
    }
    /// A streamed route's every header, names lowercase, in order (repeated ones included);
    /// empty for normal routes.
    public var allHeaders: [(name: String, value: String)] {
        get { storage.allHeaders }
        set { change { $0.allHeaders = newValue } }
    }
    /// A streamed route's request target exactly as sent, before decoding; empty for normal routes.
    public var rawTarget: String {
        get { storage.rawTarget }
        set { change { $0.rawTarget = newValue } }
    }

    public init(method: String, path: String, query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)] = [], body: [UInt8] = [], requestID: String) {
        storage = Storage(method: method, path: path, query: query, headers: headers, body: body, requestID: requestID)
    }

    /// The first header named `name` (lowercase).
    public func header(_ name: String) -> String? { storage.headers.first { $0.name == name }?.value }

    public func queryValue(_ name: String) -> String? { storage.query.first { $0.name == name }?.value }

    public subscript(param name: String) -> String { storage.parameters[name] ?? "" }
}
