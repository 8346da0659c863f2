import CMicroHTTPDStart
import CMicroHTTPD
import Foundation

// The C callbacks of MHDServer. They capture nothing: the daemon's DaemonState (and through it
// the server) arrives through `cls`, the request's state through `con_cls` (retained there
// until MHD reports the request completed).

let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, version, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let conCls, let uploadDataSize, let raw = conCls.pointee else { return tb_MHD_NO }
    let server = Unmanaged<DaemonState>.fromOpaque(cls).takeUnretainedValue().server
    let limit = server.config.maxBodyBytes
    let ctx = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()

    if !ctx.started {
        // First call: headers only. Answer nothing yet (keep-alive), except a request the front
        // door refuses or a declared body over the limit, which are answered before the body is
        // read — on this first call, after which MHD closes the connection.
        ctx.started = true
        let w = watch(connection)
        w?.deadline.store(ConnectionDeadlines.now + server.deadlines.body, ordering: .relaxed)
        if w?.daemon?.refusing.load(ordering: .acquiring) == true {
            // This daemon is stopping: answer now, never suspend.
            ctx.dispatched = true
            ctx.requestID = MHDServer.requestID(nil)
            return shuttingDown(server, ctx.requestID, connection)
        }
        if server.config.tls != nil, let w, !w.handshakeCounted {
            // Once per connection: by its first request the handshake is over.
            w.handshakeCounted = true
            switch tb_mhd_tls_resumed(connection) {
            case 1: server.handshakesResumed.add(1, ordering: .relaxed)
            case 0: server.handshakesFull.add(1, ordering: .relaxed)
            default: break
            }
        }
        let streamed = ctx.refusal == nil ? server.streams.stream(path: url.map { String(cString: $0) } ?? "/") : nil
        var pass = HeaderPass(wanted: server.wantedHeaders)
        pass.collectAll = streamed != nil
        withUnsafeMutablePointer(to: &pass) { p in _ = MHD_get_connection_values_n(connection, tb_MHD_HEADER_KIND, walkHeader, p) }
        ctx.headers = pass.kept
        if ctx.refusal == nil { ctx.refusal = pass.check.finish(version: version.map { String(cString: $0) } ?? "") }
        if ctx.refusal == nil, let tls = server.config.tls, tls.clientCAFile != nil {
            // Verified once per connection: its certificate cannot change under it.
            let checked = w?.clientCertificate ?? {
                var sha = [UInt8](repeating: 0, count: 32)
                let verdict = tb_mhd_client_certificate(connection, &sha)
                guard verdict == 1 else { return (verdict, nil, nil) }
                var dn = [CChar](repeating: 0, count: 1024)
                let subject = tb_mhd_client_certificate_subject(connection, &dn, dn.count) == 1 ? String(cString: dn) : nil
                return (verdict, sha.map { String(format: "%02x", $0) }.joined(), subject)
            }()
            w?.clientCertificate = checked
            switch checked.verdict {
            case 1:
                ctx.clientCertificate = checked.sha256
                ctx.clientCertificateSubject = checked.subject
            case 0 where !tls.clientCertificateRequired: break
            case 0: ctx.certificateRefusal = "this listener requires a client certificate"
            default: ctx.certificateRefusal = "the client certificate does not verify against this listener's CA"
            }
        }
        let declared = MHD_lookup_connection_value(connection, tb_MHD_HEADER_KIND, "Content-Length").flatMap { Int(String(cString: $0)) }
        if ctx.refusal == nil, let n = declared, n > (streamed?.maxBodyBytes ?? limit) {
            ctx.tooLarge = true
        }
        if let streamed, ctx.refusal == nil, ctx.certificateRefusal == nil, !ctx.tooLarge {
            return dispatchStreamed(server, ctx, connection, url, method, streamed.maxBodyBytes, declared, pass.all)
        }
        guard ctx.refusal != nil || ctx.certificateRefusal != nil || ctx.tooLarge else { return tb_MHD_YES }
        ctx.dispatched = true
        return respondNow(server, ctx, connection, url, method)
    }
    if let stream = ctx.stream { return streamedCall(server, stream, ctx, connection, uploadData, uploadDataSize) }
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
        return server.queue(response, requestID: ctx.requestID, on: connection)
    }
    guard !ctx.dispatched else { return tb_MHD_YES }
    ctx.dispatched = true
    watch(connection)?.deadline.store(0, ordering: .relaxed)   // received whole: the answer is ours to give
    return respondNow(server, ctx, connection, url, method)
}

/// The connection's deadline watch (ConnectionDeadlines), set when it opened.
func watch(_ connection: OpaquePointer) -> ConnectionDeadlines.Watch? {
    tb_mhd_socket_context(connection).map { Unmanaged<ConnectionDeadlines.Watch>.fromOpaque($0).takeUnretainedValue() }
}

/// Called with the raw request target, before MHD decodes it: the request's context starts
/// here, so that an escaped '/' or NUL in the path is known before routing.
let uriLogHandler: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = { cls, uri, _ in
    let ctx = RequestContext()
    if let uri {
        ctx.refusal = uri.withMemoryRebound(to: UInt8.self, capacity: strlen(uri)) { FrontDoor.targetProblem(UnsafeBufferPointer(start: $0, count: strlen(uri))) }
        // Kept for streamed routes only (the route is not known yet): servers without any pay nothing.
        if let cls, Unmanaged<DaemonState>.fromOpaque(cls).takeUnretainedValue().server.streams.hasStreams {
            ctx.rawTarget = String(cString: uri)
        }
    }
    return Unmanaged.passRetained(ctx).toOpaque()
}

/// A connection opened or closed: its deadline watch is kept in MHD's socket context.
let connectionHandler: MHD_NotifyConnectionCallback = { cls, connection, socketContext, toe in
    guard let cls, let connection, let socketContext else { return }
    let daemon = Unmanaged<DaemonState>.fromOpaque(cls).takeUnretainedValue()
    let server = daemon.server
    if toe == tb_MHD_CONNECTION_NOTIFY_STARTED {
        daemon.adopting.subtract(1, ordering: .releasing)
        // libmicrohttpd 0.9.75 calls this after gnutls_init and before the first handshake step
        // (new_connection_process_ after new_connection_prepare_): the one moment tickets can
        // be switched on for a session it made.
        if let key = server.ticketKey { _ = tb_mhd_enable_session_tickets(connection, key.pointer) }
        let w = server.deadlines.opened(fd: tb_mhd_connection_fd(connection), daemon: daemon)
        socketContext.pointee = Unmanaged.passRetained(w).toOpaque()
    } else if let raw = socketContext.pointee {
        let w = Unmanaged<ConnectionDeadlines.Watch>.fromOpaque(raw)
        server.deadlines.closed(w.takeUnretainedValue())
        w.release()
        socketContext.pointee = nil
    }
}

private let walkHeader: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls else { return tb_MHD_NO }
    let pass = cls.assumingMemoryBound(to: HeaderPass.self)
    func bytes(_ p: UnsafePointer<CChar>?, _ n: Int) -> UnsafeBufferPointer<UInt8> {
        guard let p else { return UnsafeBufferPointer(start: nil, count: 0) }
        return p.withMemoryRebound(to: UInt8.self, capacity: n) { UnsafeBufferPointer(start: $0, count: n) }
    }
    // Read up to a NUL: a value whose length MHD counted past one holds a control character.
    let shown = value.map { strnlen($0, valueSize) } ?? 0
    pass.pointee.add(name: bytes(key, keySize), value: bytes(value, shown), valueLength: valueSize)
    return tb_MHD_YES
}

/// Builds the request, runs the handler, and queues its answer or suspends for it.
private func respondNow(_ server: MHDServer, _ ctx: RequestContext, _ connection: OpaquePointer,
                        _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?) -> MHD_Result {
    let box = Unmanaged.passUnretained(ctx).toOpaque()
    MHD_get_connection_values(connection, tb_MHD_GET_ARGUMENT_KIND, collectQuery, box)
    let requestID = MHDServer.requestID(ctx.headers.first { $0.name == "x-request-id" }?.value)
    ctx.requestID = requestID
    var request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                              query: ctx.query, headers: ctx.headers, body: ctx.body, requestID: requestID)
    request.bodyTooLarge = ctx.tooLarge
    request.refusal = ctx.refusal
    request.clientCertificateSHA256 = ctx.clientCertificate
    request.clientCertificateSubject = ctx.clientCertificateSubject
    request.certificateRefusal = ctx.certificateRefusal
    ctx.body = []
    switch server.handle(consume request) {
    case .now(let response):
        return server.queue(response, requestID: requestID, on: connection)
    case .later(let work):
        let conn = MHDConnection(pointer: connection)
        let daemon = watch(connection)?.daemon
        server.suspended.add(1, ordering: .sequentiallyConsistent)
        daemon?.suspended.add(1, ordering: .sequentiallyConsistent)
        // A stop may have begun since the headers came (a long body): counted first, then
        // checked, against its store of `refusing` then read of `suspended` (all sequentially
        // consistent), so either it waits for this request or this request is refused here.
        // Suspending after it saw none would have MHD_stop_daemon abort the process.
        if daemon?.refusing.load(ordering: .sequentiallyConsistent) == true {
            daemon?.suspended.subtract(1, ordering: .sequentiallyConsistent)
            server.suspended.subtract(1, ordering: .sequentiallyConsistent)
            return shuttingDown(server, requestID, connection)
        }
        MHD_suspend_connection(connection)
        work { response in
            ctx.ready.withLock { $0 = response }
            MHD_resume_connection(conn.pointer)
            daemon?.suspended.subtract(1, ordering: .acquiringAndReleasing)
            server.suspended.subtract(1, ordering: .acquiringAndReleasing)
        }
        return tb_MHD_YES
    }
}

/// The answer of a daemon that is stopping, to a request it will not suspend for.
func shuttingDown(_ server: MHDServer, _ requestID: String, _ connection: OpaquePointer) -> MHD_Result {
    server.queue(.json(503, "{\"error\":\"shutting_down\",\"message\":\"this listener is closing; retry\",\"request_id\":\"\(requestID)\"}"),
                 requestID: requestID, on: connection)
}

let collectQuery: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return tb_MHD_YES }
    let ctx = Unmanaged<RequestContext>.fromOpaque(cls).takeUnretainedValue()
    ctx.query.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return tb_MHD_YES
}

let completedHandler: MHD_RequestCompletedCallback = { cls, connection, conCls, _ in
    // Kept alive, the next request has the idle timeout to arrive whole.
    if let cls, let connection {
        let server = Unmanaged<DaemonState>.fromOpaque(cls).takeUnretainedValue().server
        watch(connection)?.deadline.store(ConnectionDeadlines.now + server.deadlines.idle, ordering: .relaxed)
    }
    guard let conCls, let raw = conCls.pointee else { return }
    let ctx = Unmanaged<RequestContext>.fromOpaque(raw)
    if let stream = ctx.takeUnretainedValue().stream, let cls {
        stream.close()
        let server = Unmanaged<DaemonState>.fromOpaque(cls).takeUnretainedValue().server
        stream.daemon?.suspended.subtract(1, ordering: .acquiringAndReleasing)
        server.suspended.subtract(1, ordering: .acquiringAndReleasing)
    }
    ctx.release()
    conCls.pointee = nil
}
