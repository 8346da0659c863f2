import BrokerCore
import CCurlShim
import Foundation

/// CurlUpstreamTransport makes the outbound proxy's exchanges with upstream APIs through
/// libcurl, on the calling worker thread, streaming both bodies: the request body is read from
/// its `ByteSource` straight into libcurl's send buffer, and each piece of the response is
/// written into the `ByteSink` from libcurl's receive buffer, with no copy in between and
/// nothing held whole. A sink whose `write` blocks holds libcurl with it, so a slow caller slows
/// the download instead of growing memory.
///
/// What goes out is what the caller gave: its method and headers, in order, and no header of
/// libcurl's own (no `Accept`, no `Expect: 100-continue`, no `Accept-Encoding`); the body is
/// framed from `ByteSource.length` (Content-Length, or chunked when unknown), so a caller's
/// `Content-Length`, `Transfer-Encoding` or `Expect` is not passed on. What comes back is what
/// the upstream sent: status and every header line in order, the body undecoded. Interim 1xx
/// heads are skipped; redirects are never followed; unless `allowPrivateAddresses`, the address
/// actually connected to must be public (http.c's check, so a name resolving to loopback, a
/// private network or a metadata service is refused too).
///
/// Connections are kept per origin and address check in a `ConnectionPool` of its own (the
/// same type as `BlockingHTTP`'s): API traffic then never evicts the IdP connections a refresh
/// needs warm, and its bounds are sized for it. A handle whose exchange failed, or was cut, is
/// closed, never given back. Trust is the deployment's CA bundle (`TrustStore`).
///
/// A request that is not idempotent (RFC 9110 §9.2.2) leaves at most once: libcurl's own
/// re-send on a kept connection that died before answering is refused, and the exchange is
/// `unanswered` (the proxy decides whether to send again).
///
/// Thread-safety: any thread; each exchange uses its own handle.
public final class CurlUpstreamTransport: UpstreamTransport {
    private let pool: ConnectionPool
    private let trustStore: TrustStore
    private let keepAlive: TimeInterval

    /// `settings`: the CA bundle (nil: the system's) and the bounds of kept connections.
    public init(settings: HTTPConnectionSettings = .init()) {
        tb_http_global_init()
        keepAlive = settings.keepAlive
        pool = ConnectionPool(settings: settings)
        trustStore = TrustStore(path: settings.caFile ?? TrustStore.systemBundle)
    }

    /// Idle connections kept now, all origins together.
    public var idleConnections: Int { pool.idleCount }

    public func send(_ request: UpstreamRequest, head: (UpstreamHead) -> (any ByteSink)?) throws(UpstreamFailure) {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              url.host != nil else { throw .notSent("not an http(s) URL") }
        // Anything else would let a method or a header end its line early and start another.
        guard Self.isToken(request.method) else { throw .notSent("not an HTTP method") }
        guard request.headers.allSatisfy({ Self.isToken($0.name) && !$0.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 } }) else {
            throw .notSent("not an HTTP header")
        }
        // Keyed by the client certificate too: a connection that presented one client's
        // certificate never carries another client's request (nor resumes its TLS session).
        let destination = ConnectionPool.Destination(url, trust: ProviderTrust(anchorsPEM: nil, clientCertificate: request.clientCertificate),
                                                     publicOnly: !request.allowPrivateAddresses)
        if scheme == "https" { trustStore.refresh() }
        let handle = pool.take(destination)
        // An empty value goes as `Name;`: libcurl reads `Name:` alone as "remove this header".
        let lines = request.headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" }
        var keepAliveTimeout: Int?
        let result = withoutActuallyEscaping(head) { head in
            let exchange = Exchange(source: request.body, head: head)
            let outcome = BlockingHTTP.withCStrings(lines) { headers in
                request.url.withCString { u in
                    request.method.withCString { m in
                        Self.withOptionalCString(request.clientCertificate?.certificatePEM) { cert, certLength in
                            Self.withOptionalCString(request.clientCertificate?.keyPEM) { key, keyLength in
                                var q = tb_http_stream_request(
                                    method: m, url: u, headers: headers, nheaders: Int32(lines.count),
                                    has_body: request.body == nil ? 0 : 1, body_len: Int64(request.body.map { $0.length ?? -1 } ?? 0),
                                    connect_timeout_ms: Self.milliseconds(request.connectTimeout), timeout_ms: Self.milliseconds(request.totalTimeout),
                                    max_bytes: Int64(max(0, request.maxResponseBytes)), once: Self.idempotent(request.method) ? 0 : 1,
                                    public_only: request.allowPrivateAddresses ? 0 : 1, trust: trustStore.pointer, max_idle_s: Int(handle.maxIdle),
                                    client_cert: cert, client_cert_len: certLength, client_key: key, client_key_len: keyLength)
                                var callbacks = tb_http_stream_callbacks(context: Unmanaged.passUnretained(exchange).toOpaque(),
                                                                         read_body: readBody, head: takeHead, body: writeBody)
                                return withExtendedLifetime(exchange) { tb_http_stream(handle.pointer, &q, &callbacks) }
                            }
                        }
                    }
                }
            }
            if outcome.head_delivered != 0 { exchange.sink?.finish(complete: outcome.error == 0) }
            keepAliveTimeout = exchange.keepAliveTimeout
            return outcome
        }
        if result.error == 0 {
            if let seconds = keepAliveTimeout { handle.learn(keepAliveTimeout: seconds, within: keepAlive) }
            pool.give(handle, to: destination)
        }   // else closed as `handle` goes
        if result.head_delivered != 0 { return }
        let reason = result.reason.map { String(cString: $0) } ?? "exchange failed"
        switch result.error {
        case 5: throw .addressRefused
        case 6: throw .bodyAbandoned
        case 1, 4: throw .notSent(reason)
        default: throw .unanswered(reason)
        }
    }

    /// RFC 9110 §9.2.2: a request with one of these methods may be sent again.
    private static func idempotent(_ method: String) -> Bool {
        ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(method)
    }

    /// RFC 9110 §5.6.2: a token, as methods and header names are.
    private static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { b in
            (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }

    private static func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?, Int) -> R) -> R {
        guard let s else { return body(nil, 0) }
        return s.withCString { body($0, strlen($0)) }
    }

    private static func milliseconds(_ seconds: Double) -> Int { seconds.isNaN ? 1 : max(1, Int((min(seconds, 1e9) * 1000).rounded(.up))) }
}

/// One exchange's Swift side, reached from the C callbacks through their context pointer:
/// where the request body comes from, whom to ask where the response body goes, and the sink
/// that answer gave. Used by the one thread performing the exchange.
private final class Exchange {
    let source: (any ByteSource)?
    let head: (UpstreamHead) -> (any ByteSink)?
    var sink: (any ByteSink)?
    /// The server's `Keep-Alive: timeout=` in seconds, when it sent one (RFC 9112 leaves the
    /// header out, but servers that close idle connections early often say when).
    var keepAliveTimeout: Int?

    init(source: (any ByteSource)?, head: @escaping (UpstreamHead) -> (any ByteSink)?) {
        self.source = source
        self.head = head
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> Exchange {
        Unmanaged<Exchange>.fromOpaque(context!).takeUnretainedValue()
    }
}

private let readBody: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, Int) -> Int = { context, buffer, count in
    guard let source = Exchange.from(context).source, let buffer else { return 0 }
    return source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count)) ?? -1
}

private let takeHead: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafePointer<tb_http_header>?, Int32) -> Int32 = { context, status, headers, count in
    let exchange = Exchange.from(context)
    var fields: [(name: String, value: String)] = []
    fields.reserveCapacity(Int(count))
    for h in UnsafeBufferPointer(start: headers, count: Int(count)) {
        fields.append((String(decoding: UnsafeRawBufferPointer(start: h.name, count: h.name_len), as: UTF8.self),
                       String(decoding: UnsafeRawBufferPointer(start: h.value, count: h.value_len), as: UTF8.self)))
    }
    let head = UpstreamHead(status: status, headers: fields)
    exchange.keepAliveTimeout = head.header("Keep-Alive").flatMap(keepAliveTimeout)
    exchange.sink = exchange.head(head)
    return exchange.sink == nil ? 0 : 1
}

private let writeBody: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int) -> Int32 = { context, data, count in
    guard let sink = Exchange.from(context).sink else { return 0 }
    return sink.write(UnsafeRawBufferPointer(start: data, count: count)) ? 1 : 0
}

/// `timeout=N` of a Keep-Alive header value (`timeout=5, max=100`).
private func keepAliveTimeout(_ value: String) -> Int? {
    value.split(separator: ",").lazy.compactMap { part -> Int? in
        let kv = part.split(separator: "=", maxSplits: 1)
        guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "timeout" else { return nil }
        return Int(kv[1].trimmingCharacters(in: .whitespaces))
    }.first
}
