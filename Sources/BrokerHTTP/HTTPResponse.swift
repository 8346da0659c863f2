/// HTTPResponse is what a handler answers. Bodies are bytes; JSON helpers set the content type.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: body)
    }

    public static func json(_ status: Int, _ text: String) -> HTTPResponse { json(status, Array(text.utf8)) }

    public static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)])
    }
}

/// HTTPReply is a handler's answer: now, or later from another thread (the connection is
/// suspended meanwhile and holds no server thread).
public enum HTTPReply: Sendable {
    case now(HTTPResponse)
    case later(@Sendable (_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void)
}
