import BrokerCore
import BrokerHTTP
import Foundation

/// CollectedResponse is a short streamed body gathered whole, then answered as one response: for
/// an upstream answer whose Content-Length is small, one hand-over to the HTTP server instead of
/// a pipe whose reader and writer wake each other per piece. An answer that breaks off is 502
/// (nothing was sent to the caller yet).
///
/// Thread-safety: one writer (the proxy thread), then `finish` answers once.
final class CollectedResponse: ByteSink, @unchecked Sendable {
    /// Bodies announced at most this long are collected.
    static let limit = 64 << 10

    private let status: Int
    private let headers: [(name: String, value: String)]
    private var body: [UInt8]
    private let requestID: String
    private let respond: @Sendable (HTTPResponse) -> Void

    init(status: Int, headers: [(name: String, value: String)], length: Int, requestID: String,
         respond: @escaping @Sendable (HTTPResponse) -> Void) {
        self.status = status
        self.headers = headers
        self.requestID = requestID
        self.respond = respond
        body = []
        body.reserveCapacity(length)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= Self.limit else { return false }
        body += bytes
        return true
    }

    func finish(complete: Bool) {
        guard complete else {
            return respond(ErrorResponse.response(.proxy(.unreachable(host: "the upstream", reason: "its answer broke off")), requestID: requestID))
        }
        respond(HTTPResponse(status: status, headers: headers, body: body))
    }
}
