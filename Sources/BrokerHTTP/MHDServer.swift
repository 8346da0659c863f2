import CMicroHTTPD
import CMicroHTTPDStart
import Foundation
import Synchronization

/// MHDServer serves HTTP/1.1 with libmicrohttpd: an epoll thread pool, keep-alive, header and
/// body limits, idle timeouts. A handler answers at once (`.now`) or later (`.later`): the
/// connection is then suspended, holds no thread, and is resumed when the answer is ready.
/// Its Acceptor accepts the connections and hands them to the daemon serving now, so a reload
/// (new TLS files) starts a second daemon and sends new connections there while the old one
/// finishes its own.
///
/// Keep-alive note: MHD closes the connection after any response queued on the *first* call of
/// the access handler for a request, so requests are answered on a later call.
///
/// Thread-safety: `handle` is called on MHD's threads, concurrently; `.later` work completes on
/// any thread.
public final class MHDServer: Sendable {
    let config: HTTPServerConfig
    /// The headers handlers may read, lowercase, as bytes for HeaderPass.
    let wantedHeaders: [(name: String, bytes: [UInt8])]
    /// Takes the request over (consuming): the handler's changes to it (route parameters, trace
    /// seed) are made in place instead of on a copy of its fields.
    let handle: @Sendable (consuming HTTPRequest) -> HTTPReply
    /// The streamed routes (Router.addStream): chosen on a request's headers, then handled by
    /// `handle` with the body still arriving.
    let streams: Router
    /// The daemon new connections go to (nil before the start and after the stop).
    private let daemon = Mutex<DaemonBox?>(nil)
    private let acceptor = Mutex<Acceptor?>(nil)
    /// True once stopped; held while a reload or the stop runs, so that they never overlap.
    private let lifecycle = Mutex<Bool>(false)
    /// The old daemons of reloads, still finishing: the stop waits for them.
    private let retiring = DispatchGroup()
    /// Set when the stop begins: old daemons stop waiting for idle connections to end.
    private let closing = Atomic<Bool>(false)
    let suspended = Atomic<Int>(0)
    let deadlines: ConnectionDeadlines

    /// Waits until `check` holds or `seconds` pass; true when it held.
    private static func wait(_ seconds: TimeInterval, until check: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !check() {
            guard Date() < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    /// Stops `d` once nothing of it is suspended: it tells clients to go, waits up to `grace`
    /// for its connections to end (or only for its suspended requests, `waitForConnections`
    /// false), then answers new requests at once, calls `release` after the last suspended one
    /// (from then on no connection may be handed to `d`) and stops it.
    private func retire(_ d: DaemonBox, grace: TimeInterval, waitForConnections: Bool, release: () -> Void = {}) {
        let s = d.state
        s.draining.store(true, ordering: .releasing)
        _ = Self.wait(grace) {
            s.suspended.load(ordering: .acquiring) == 0
                && (!waitForConnections || closing.load(ordering: .acquiring)
                    || (s.adopting.load(ordering: .acquiring) == 0 && tb_mhd_connections(d.pointer) == 0))
        }
        // Sequentially consistent, as the suspend in MHDCallbacks: a request either sees
        // `refusing` or is counted in `suspended` here.
        s.refusing.store(true, ordering: .sequentiallyConsistent)
        // A request suspended before `refusing` was seen is answered within the refresh patience.
        _ = Self.wait(180) { s.suspended.load(ordering: .sequentiallyConsistent) == 0 }
        release()
        usleep(50_000)
        MHD_stop_daemon(d.pointer)
    }
    /// Requests suspended now, waiting for their `.later` answer.
    public var suspendedRequests: Int { suspended.load(ordering: .acquiring) }
    /// Connections closed because their client was too slow (ConnectionDeadlines).
    public var slowClientsClosed: Int { deadlines.closed.load(ordering: .relaxed) }
    /// Connections accepted since the start (kept-alive ones count once).
    public var connectionsOpened: Int { deadlines.opened.load(ordering: .relaxed) }
    /// TLS handshakes since the start, full and resumed, each connection counted once at its
    /// first request (a connection that sends none is not counted).
    public var tlsHandshakesFull: Int { handshakesFull.load(ordering: .relaxed) }
    public var tlsHandshakesResumed: Int { handshakesResumed.load(ordering: .relaxed) }
    let handshakesFull = Atomic<Int>(0), handshakesResumed = Atomic<Int>(0)
    /// The session-ticket key of every daemon of this server (nil: tickets off).
    let ticketKey: TicketKey?

    /// A GnuTLS session-ticket key, wiped and freed with the server.
    final class TicketKey: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init?() {
            guard let p = tb_tls_ticket_key_new() else { return nil }
            pointer = p
        }
        deinit { tb_tls_ticket_key_free(pointer) }
    }

    /// A started daemon and the state its callbacks get as `cls` (kept alive by this box until
    /// the daemon is stopped).
    struct DaemonBox: @unchecked Sendable {
        let pointer: OpaquePointer
        let state: DaemonState
    }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
        /// The port is taken (another instance, or another program).
        public var addressInUse = false
    }

    public init(config: HTTPServerConfig, streams: Router = Router(), handle: @escaping @Sendable (consuming HTTPRequest) -> HTTPReply) {
        self.config = config
        self.streams = streams
        wantedHeaders = config.headers.map { ($0.lowercased(), Array($0.lowercased().utf8)) }
        self.handle = handle
        deadlines = ConnectionDeadlines(headers: config.headerTimeout, body: config.bodyTimeout, idle: TimeInterval(config.idleTimeout))
        // Without a key (GnuTLS could not draw one) every handshake is a full one: slower, not wrong.
        ticketKey = config.tls?.sessionTickets == true ? TicketKey() : nil
    }

    /// Binds the configured address for a moment and lets it go: a port in use is a start-up
    /// error before anything else has started (the refresh engine, the change feed).
    public func probe() throws {
        _ = try tlsMaterial()
        try bind().stop()
    }

    /// The configured address, bound and listening (not yet accepting).
    private func bind() throws -> Acceptor {
        do {
            return try Acceptor(address: try address())
        } catch let e as Acceptor.BindError {
            throw startError(e.code)
        }
    }

    private func address() throws -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = config.port.bigEndian
        guard inet_pton(AF_INET, config.host, &addr.sin_addr) == 1 else {
            throw StartError(description: "listen host '\(config.host)' is not an IPv4 address")
        }
        return addr
    }

    private func startError(_ code: Int32) -> StartError {
        let why = code == EADDRINUSE ? "the address is already in use (another instance?)"
            : code == EACCES ? "not permitted" : "error \(code)"
        return StartError(description: "cannot listen on \(config.host):\(config.port): \(why)", addressInUse: code == EADDRINUSE)
    }

    /// A TLS listener's PEM files, read.
    struct TLSMaterial {
        let key: String, certificate: String, trust: String?
    }

    /// Reads the configured TLS files (nil: plain HTTP); the error names the file, never its contents.
    func tlsMaterial() throws -> TLSMaterial? {
        guard let tls = config.tls else { return nil }
        func read(_ path: String, _ what: String) throws -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains("-----BEGIN ") else {
                throw StartError(description: "cannot read the TLS \(what) file \(path) (PEM expected)")
            }
            return text
        }
        return TLSMaterial(key: try read(tls.keyFile, "key"), certificate: try read(tls.certificateFile, "certificate"),
                           trust: try tls.clientCAFile.map { try read($0, "client CA") })
    }

    /// Starts a daemon with no socket of its own; a certificate or key it refuses is an error.
    private func launch(_ tls: TLSMaterial?) throws -> DaemonBox {
        let state = DaemonState(server: self)
        let cls = Unmanaged.passUnretained(state).toOpaque()
        func with(_ s: String?, _ body: (UnsafePointer<CChar>?) -> OpaquePointer?) -> OpaquePointer? {
            guard let s else { return body(nil) }
            return s.withCString { body($0) }
        }
        // The connection limit is the Acceptor's (`room`). MHD gets one no worker can reach: each
        // worker's share of MHD's limit is the whole of ours. A worker handed a connection past
        // its share closes it in new_connection_process_'s "firm check", which in 0.9.75 leaves
        // cleanup_connection_mutex locked (daemon.c:2783-2796 never unlock it), and the worker
        // hangs for good at its next connection's close; MHD's own accept never gets there, but
        // connections handed over and queued can, since workers take them up later.
        let mhdLimit = UInt32(clamping: config.maxConnections * max(config.threads, 1))
        let d = with(tls?.key) { key in with(tls?.certificate) { cert in with(tls?.trust) { trust in
            var o = tb_mhd_options(threads: UInt32(config.threads), connection_timeout_s: UInt32(config.idleTimeout),
                                   connection_memory_limit: config.maxHeaderBytes, connection_limit: mhdLimit,
                                   per_ip_connection_limit: UInt32(config.maxConnectionsPerClient), handler: accessHandler,
                                   completed: completedHandler, uri_log: uriLogHandler, notify_connection: connectionHandler, cls: cls,
                                   tls_key: key, tls_cert: cert, tls_trust: trust)
            return tb_mhd_start(&o)
        } } }
        guard let d else {
            throw StartError(description: tls == nil ? "cannot start the HTTP server for \(config.host):\(config.port)"
                : "cannot listen on \(config.host):\(config.port): the TLS certificate or key was refused (a PEM chain and its private key?)")
        }
        return DaemonBox(pointer: d, state: state)
    }

    /// Hands an accepted connection to the daemon serving now, which owns it from then on (MHD
    /// closes one it cannot take: over the per-client cap, for one).
    private func adopt(_ fd: Int32, _ address: sockaddr_in) {
        daemon.withLock { box in
            guard let box else {
                close(fd)
                return
            }
            box.state.adopting.add(1, ordering: .releasing)
            var addr = address
            let taken = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { MHD_add_connection(box.pointer, fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if taken != tb_MHD_YES { box.state.adopting.subtract(1, ordering: .releasing) }
        }
    }

    /// Room for one more connection on the daemon serving now, counting those handed to it that
    /// no worker has taken up yet (a burst would otherwise be admitted past the limit and closed).
    private var room: Bool {
        daemon.withLock { box in
            box.map { Int(tb_mhd_connections($0.pointer)) + $0.state.adopting.load(ordering: .acquiring) < config.maxConnections } ?? true
        }
    }

    /// Binds and starts serving; throws with a clear message when the address or the TLS files
    /// are unusable.
    public func start() throws {
        let material = try tlsMaterial()
        let a = try bind()
        let d: DaemonBox
        do {
            d = try launch(material)
        } catch {
            a.stop()
            throw error
        }
        daemon.withLock { $0 = d }
        acceptor.withLock { $0 = a }
        a.run(room: { [self] in room }, hand: { [self] in adopt($0, $1) })
        deadlines.start()
    }

    /// Reads the TLS files again and serves new connections with them; connections already open
    /// finish on the old daemon, which stops once they are done (at most `grace` later). Files
    /// the new daemon refuses leave the listener as it was.
    public func reload(grace: TimeInterval = 30) throws {
        try lifecycle.withLock { stopped in
            guard !stopped, daemon.withLock({ $0 }) != nil else { return }
            let new = try launch(try tlsMaterial())
            guard let old = daemon.withLock({ b -> DaemonBox? in defer { b = new }; return b }) else { return }
            retiring.enter()
            Thread.detachNewThread { [self] in
                retire(old, grace: grace, waitForConnections: true)
                retiring.leave()
            }
        }
    }

    /// The bound port (the chosen one when configured with 0).
    public var port: UInt16 { acceptor.withLock { $0?.port ?? 0 } }

    /// Waits up to `grace` for suspended requests to be answered (every answer meanwhile tells
    /// its client to go), then answers new requests at once with 503 and stops after the last
    /// suspended one. Connections are accepted until then: a client that reconnects at once is
    /// answered (503 once refusing) rather than refused at the socket. The old daemons of recent
    /// reloads stop the same way: it returns when every daemon has stopped.
    public func stop(grace: TimeInterval = 10) {
        lifecycle.withLock { stopped in
            guard !stopped, let d = daemon.withLock({ $0 }) else { return }
            stopped = true
            closing.store(true, ordering: .releasing)
            retire(d, grace: grace, waitForConnections: false) {
                acceptor.withLock { a in a?.stop() }
                daemon.withLock { $0 = nil }
            }
            retiring.wait()
            deadlines.stop()
        }
    }

    /// Queues `response`, or for `HTTPResponse.drop` answers MHD_NO, on which MHD closes the
    /// socket without sending anything.
    func queue(_ response: HTTPResponse, requestID: String, on connection: OpaquePointer) -> MHD_Result {
        guard !response.isDrop else {
            response.bodyPipe?.abandon()
            return tb_MHD_NO
        }
        let made: OpaquePointer?
        if let pipe = response.bodyPipe {
            pipe.attach(connection, watch: watch(connection), stall: config.bodyTimeout)
            let cls = Unmanaged.passRetained(pipe).toOpaque()
            made = MHD_create_response_from_callback(pipe.length.map { UInt64($0) } ?? tb_MHD_SIZE_UNKNOWN, 64 * 1024, pipeReader, cls, pipeFree)
            if made == nil { Unmanaged<ResponseBodyPipe>.fromOpaque(cls).release(); pipe.abandon() }
        } else {
            made = response.body.withUnsafeBytes { buf in
                MHD_create_response_from_buffer(buf.count, UnsafeMutableRawPointer(mutating: buf.baseAddress), tb_MHD_RESPMEM_MUST_COPY)
            }
        }
        guard let r = made else { return tb_MHD_NO }
        // withCString lends a native string's own bytes; passing a String where a C string is
        // taken copies it to the heap first.
        for h in response.headers { h.name.withCString { n in h.value.withCString { v in _ = MHD_add_response_header(r, n, v) } } }
        if watch(connection)?.daemon?.draining.load(ordering: .acquiring) == true {
            MHD_add_response_header(r, "Connection", "close")   // this daemon is closing: reconnect elsewhere
        }
        MHD_add_response_header(r, "X-Request-Id", requestID)
        let ok = MHD_queue_response(connection, UInt32(response.status), r)
        MHD_destroy_response(r)
        return ok
    }

    private static let counter = Atomic<UInt64>(0)
    private static let prefix: String = {
        var rng = SystemRandomNumberGenerator()
        return String(rng.next() & 0xffff_ffff, radix: 16) + "-"
    }()

    /// A request id: the caller's when it is 1...64 characters of [A-Za-z0-9._-], else a fresh one.
    static func requestID(_ given: String?) -> String {
        if let g = given, (1...64).contains(g.utf8.count),
           g.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 46 || $0 == 95 }) {
            return g
        }
        // Unique, not secret: a random per-process prefix and a counter (no syscall per request).
        let n = counter.add(1, ordering: .relaxed).newValue
        return prefix + String(n, radix: 16)
    }
}
