import CMicroHTTPD
import Foundation

// The C callbacks of MHDServer. They capture nothing: the server arrives through `cls`, the
// request's state through `con_cls` (retained there until MHD reports the request completed).

let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let conCls, let uploadDataSize else { return tb_MHD_NO }
    let server = Unmanaged<MHDServer>.fromOpaque(cls).takeUnretainedValue()
    let limit = server.config.maxBodyBytes

    guard let raw = conCls.pointee else {
        // First call: headers only. Answer nothing yet (keep-alive), except a declared body over
        // the limit, which is refused before it is read.
        let ctx = RequestContext()
        conCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
        if let cl = MHD_lookup_connection_value(connection, tb_MHD_HEADER_KIND, "Content-Length"),
           let n = Int(String(cString: cl)), n > limit {
            ctx.tooLarge = true
            ctx.dispatched = true
            return respondNow(server, ctx, connection, url, method)
        }
        return tb_MHD_YES
    }
    let ctx = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()

    if uploadDataSize.pointee > 0 {
        let n = uploadDataSize.pointee
        if !ctx.tooLarge, let uploadData {
            if ctx.body.count + n > limit {
                ctx.tooLarge = true
                ctx.body = []
            } else {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: n) { ctx.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
            }
        }
        uploadDataSize.pointee = 0
        return tb_MHD_YES
    }

    if let response = ctx.ready.withLock({ r -> HTTPResponse? in defer { r = nil }; return r }) {
        let id = response.headers.first { $0.name == "X-Request-Id" }?.value ?? ""
        var clean = response
        clean.headers.removeAll { $0.name == "X-Request-Id" }
        return server.queue(clean, requestID: id, on: connection)
    }
    guard !ctx.dispatched else { return tb_MHD_YES }
    ctx.dispatched = true
    return respondNow(server, ctx, connection, url, method)
}

/// Builds the request, runs the handler, and queues its answer or suspends for it.
private func respondNow(_ server: MHDServer, _ ctx: RequestContext, _ connection: OpaquePointer,
                        _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?) -> MHD_Result {
    let box = Unmanaged.passUnretained(ctx).toOpaque()
    for name in server.config.headers {
        if let v = MHD_lookup_connection_value(connection, tb_MHD_HEADER_KIND, name) { ctx.headers.append((name, String(cString: v))) }
    }
    MHD_get_connection_values(connection, tb_MHD_GET_ARGUMENT_KIND, collectQuery, box)
    let requestID = MHDServer.requestID(ctx.headers.first { $0.name == "x-request-id" }?.value)
    var request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                              query: ctx.query, headers: ctx.headers, body: ctx.body, requestID: requestID)
    request.bodyTooLarge = ctx.tooLarge
    ctx.body = []
    switch server.handle(request) {
    case .now(let response):
        return server.queue(response, requestID: requestID, on: connection)
    case .later(let work):
        let conn = MHDConnection(pointer: connection)
        server.suspended.add(1, ordering: .acquiringAndReleasing)
        MHD_suspend_connection(connection)
        work { response in
            var tagged = response
            tagged.headers.append(("X-Request-Id", requestID))
            ctx.ready.withLock { $0 = tagged }
            MHD_resume_connection(conn.pointer)
            server.suspended.subtract(1, ordering: .acquiringAndReleasing)
        }
        return tb_MHD_YES
    }
}

private let collectQuery: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return tb_MHD_YES }
    let ctx = Unmanaged<RequestContext>.fromOpaque(cls).takeUnretainedValue()
    ctx.query.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return tb_MHD_YES
}

let completedHandler: MHD_RequestCompletedCallback = { _, _, conCls, _ in
    guard let conCls, let raw = conCls.pointee else { return }
    Unmanaged<RequestContext>.fromOpaque(raw).release()
    conCls.pointee = nil
}
