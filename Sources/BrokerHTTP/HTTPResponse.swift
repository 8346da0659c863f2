/// HTTPResponse is what a handler answers. Bodies are bytes; JSON helpers set the content type.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// What the request's log line says of this answer besides its status (an error's code):
    /// never sent, and never anything secret.
    public var logFields: [(String, String)] = []
    /// Who made the request, for its log line (an API key's id, never a secret). Apart from
    /// `logFields` so that naming the caller of every answer allocates nothing.
    public var caller: String?
    /// A streamed body (Router.addStream routes): sent as the handler writes it, with
    /// Content-Length when the pipe's length is known, else chunked; `body` is then unused.
    public var bodyPipe: ResponseBodyPipe?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders, body: body)
    }

    // Shared, never built per response (an array is a heap allocation; these are copied on write).
    private static let jsonHeaders = [(name: "Content-Type", value: "application/json")]
    private static let noStore = [(name: "Cache-Control", value: "no-store"), (name: "Pragma", value: "no-cache")]
    private static let jsonNoStore = jsonHeaders + noStore

    public static func json(_ status: Int, _ text: String) -> HTTPResponse { json(status, Array(text.utf8)) }

    /// This response, never to be stored by a cache or proxy: `Cache-Control: no-store` and
    /// `Pragma: no-cache`, as RFC 6749 §5.1 requires of every response that carries a token.
    public func uncacheable() -> HTTPResponse {
        var r = self
        if r.headers.count == 1, r.headers[0] == Self.jsonHeaders[0] { r.headers = Self.jsonNoStore } else { r.headers += Self.noStore }
        return r
    }

    /// A response whose body is written into `pipe` after it is handed to `respond`.
    public static func streamed(_ status: Int, headers: [(name: String, value: String)], pipe: ResponseBodyPipe) -> HTTPResponse {
        var r = HTTPResponse(status: status, headers: headers)
        r.bodyPipe = pipe
        return r
    }

    public static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)])
    }

    /// A marker, not a response: the server closes the connection without sending a single byte
    /// of an answer (status 0, never on the wire). For test doubles that must look like a peer
    /// that died after reading the request; works for `.now` and `.later` answers alike.
    public static let drop = HTTPResponse(status: 0)

    /// True for `drop`.
    public var isDrop: Bool { status == 0 }
}

/// HTTPReply is a handler's answer: now, or later from another thread (the connection is
/// suspended meanwhile and holds no server thread).
public enum HTTPReply: Sendable {
    case now(HTTPResponse)
    case later(@Sendable (_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void)
}
