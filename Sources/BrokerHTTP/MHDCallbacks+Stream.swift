import CMicroHTTPD
import Foundation

// The access handler's part for streamed routes (Router.addStream): the handler runs on the
// request's first call (headers only); the body then flows through the StreamedExchange, and
// the answer is queued once the request is received whole. A streamed request counts as
// suspended (for a stop's wait) from its dispatch until MHD completes it.

/// First call of a streamed route's request: builds the request and runs the handler.
func dispatchStreamed(_ server: MHDServer, _ ctx: RequestContext, _ connection: OpaquePointer,
                      _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?, _ limit: Int, _ declared: Int?,
                      _ headers: [(name: String, value: String)]) -> MHD_Result {
    ctx.dispatched = true
    let chunked = headers.contains { $0.name == "transfer-encoding" }
    let hasBody = chunked || (declared ?? 0) > 0
    let exchange = StreamedExchange(connection: connection, length: chunked ? nil : declared, limit: limit, hasBody: hasBody)
    let w = watch(connection)
    let daemon = w?.daemon
    server.suspended.add(1, ordering: .sequentiallyConsistent)
    daemon?.suspended.add(1, ordering: .sequentiallyConsistent)
    // As respondNow's suspend: counted first, then checked against a stop that began meanwhile.
    if daemon?.refusing.load(ordering: .sequentiallyConsistent) == true {
        daemon?.suspended.subtract(1, ordering: .sequentiallyConsistent)
        server.suspended.subtract(1, ordering: .sequentiallyConsistent)
        ctx.requestID = MHDServer.requestID(nil)
        return shuttingDown(server, ctx.requestID, connection)
    }
    exchange.daemon = daemon
    ctx.stream = exchange
    // A body has the body timeout between pieces; waiting on the handler has none.
    w?.deadline.store(hasBody ? ConnectionDeadlines.now + server.deadlines.body : 0, ordering: .relaxed)
    let box = Unmanaged.passUnretained(ctx).toOpaque()
    MHD_get_connection_values(connection, tb_MHD_GET_ARGUMENT_KIND, collectQuery, box)
    let requestID = MHDServer.requestID(ctx.headers.first { $0.name == "x-request-id" }?.value)
    ctx.requestID = requestID
    var request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                              query: ctx.query, headers: ctx.headers, requestID: requestID)
    request.clientCertificateSHA256 = ctx.clientCertificate
    request.clientCertificateSubject = ctx.clientCertificateSubject
    request.bodyStream = hasBody ? exchange : nil
    request.allHeaders = headers
    request.rawTarget = ctx.rawTarget ?? ""
    switch server.handle(consume request) {
    case .now(let response): exchange.respond(response)
    case .later(let work): work { exchange.respond($0) }
    }
    return tb_MHD_YES
}

/// A later call of a streamed route's request: an upload piece, or the end of the request.
func streamedCall(_ server: MHDServer, _ exchange: StreamedExchange, _ ctx: RequestContext, _ connection: OpaquePointer,
                  _ uploadData: UnsafePointer<CChar>?, _ uploadDataSize: UnsafeMutablePointer<Int>) -> MHD_Result {
    let w = watch(connection)
    let n = uploadDataSize.pointee
    if n > 0, let uploadData {
        switch exchange.offer(UnsafeRawPointer(uploadData), n) {
        case .close:
            return tb_MHD_NO
        case .took(let k, let suspended):
            uploadDataSize.pointee = n - k
            // Progress restarts the body timeout; a wait on the reader is ours, not the client's.
            w?.deadline.store(suspended ? 0 : ConnectionDeadlines.now + server.deadlines.body, ordering: .relaxed)
        }
        return tb_MHD_YES
    }
    exchange.end()
    w?.deadline.store(0, ordering: .relaxed)
    if exchange.tooLarge {
        exchange.respond(.json(413, "{\"error\":\"payload_too_large\",\"message\":\"request body larger than \(exchange.limit) bytes\",\"request_id\":\"\(ctx.requestID)\"}"))
    }
    guard let response = exchange.answerOrSuspend() else { return tb_MHD_YES }
    exchange.pipe = response.bodyPipe
    return server.queue(response, requestID: ctx.requestID, on: connection)
}
