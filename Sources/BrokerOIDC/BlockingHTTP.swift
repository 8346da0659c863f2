import BrokerCore
import CCurlShim
import Foundation
import Synchronization

/// BlockingHTTP makes one HTTP exchange with an IdP on the calling thread (a worker thread) with
/// libcurl. Connections are kept per destination (`ConnectionPool`), so a refresh costs one
/// request on a warm connection and no hand-off to another thread — FoundationNetworking's
/// URLSession, measured in the refresh storm, spent about a fifth of the broker's CPU in its own
/// dispatch queues. A connection that must be opened again resumes its TLS session; the
/// deployment's CA bundle is parsed once (`TrustStore`); DNS answers are shared. It never
/// follows redirects (a token endpoint that redirects is misconfigured, and following would
/// resend credentials), caps the response size, and reports failures with generic reasons that
/// quote nothing from the response.
public final class BlockingHTTP: Sendable {
    public struct Reply: Sendable {
        public let status: Int
        /// Retry-After in seconds, when the IdP sent one in that form.
        public let retryAfter: Int?
        /// The `DPoP-Nonce` header (RFC 9449 §8, §9), when the server sent one.
        public let dpopNonce: String?
        public let body: Data
        /// The `Content-Type` header, when the server sent one.
        public var contentType: String? = nil
    }

    /// Why an exchange failed. The reasons are generic on purpose: they quote nothing received.
    public enum Failure: Error, Sendable {
        /// The request provably never reached the server (DNS failure, connection refused or
        /// connect timeout, TLS handshake failure): sending it again cannot repeat anything.
        case notSent(String)
        /// The server's certificate was refused (not issued by a trusted CA, expired, or for
        /// another name; OpenSSL's words): the request never left, and no retry mends it until
        /// the trust or the certificate changes.
        case certificateRefused(String)
        /// The request may have reached the server and been acted on (timeout after sending,
        /// connection closed or reset, empty reply): sending it again may repeat it.
        case unanswered(String)
        /// The answer exceeded `maxResponseBytes`.
        case tooLarge
    }

    /// Connections and handshakes since start, all destinations together (a broker may talk to
    /// thousands of hosts: no figure per host).
    public struct Counts: Sendable, Equatable {
        public var opened = 0
        public var reused = 0
        public var fullHandshakes = 0
        public var resumedHandshakes = 0
        public var caReloads = 0
        public var caLoadFailures = 0
        public var idle = 0
    }

    private let pool: ConnectionPool
    private let trustStore: TrustStore
    private let opened = Atomic<Int>(0), reused = Atomic<Int>(0), full = Atomic<Int>(0), resumed = Atomic<Int>(0)
    private let timeoutMS: Int
    public let maxResponseBytes: Int
    public let settings: HTTPConnectionSettings

    public init(timeout: TimeInterval = 10, maxResponseBytes: Int = 256 * 1024, settings: HTTPConnectionSettings = .init()) {
        tb_http_global_init()
        timeoutMS = Int(timeout * 1000)
        self.maxResponseBytes = maxResponseBytes
        self.settings = settings
        pool = ConnectionPool(settings: settings)
        trustStore = TrustStore(path: settings.caFile ?? TrustStore.systemBundle)
    }

    public var counts: Counts {
        Counts(opened: opened.load(ordering: .relaxed), reused: reused.load(ordering: .relaxed),
               fullHandshakes: full.load(ordering: .relaxed), resumedHandshakes: resumed.load(ordering: .relaxed),
               caReloads: trustStore.reloaded, caLoadFailures: trustStore.failed, idle: pool.idleCount)
    }

    /// `headers` are `Name: value` lines. `timeout` bounds this exchange (nil: the instance's).
    /// `once`: the request leaves at most once — for requests that must never be sent twice (a
    /// refresh-token grant, a code). libcurl silently re-sends a request when a reused connection
    /// closes without an answer; with `once` that second send is refused and the exchange is
    /// `unanswered` (see http.c), so these requests still use warm connections.
    /// `publicOnly`: connect only to public addresses (webhook receivers: no loopback, private,
    /// link-local or metadata address, whatever the DNS answers).
    /// `trust`: whom the TLS connection trusts (the deployment's bundle, or a client's anchors),
    /// and the client certificate it presents, if any.
    public func send(_ method: String, _ url: URL, headers: [String], body: [UInt8]? = nil, timeout: TimeInterval? = nil,
                     once: Bool = false, publicOnly: Bool = false, trust: ProviderTrust = .deployment) throws(Failure) -> Reply {
        let ms = timeout.map { max(1, Int($0 * 1000)) } ?? timeoutMS
        // The request this call is made for names its span as the call's parent (W3C Trace Context).
        let headers = CurrentTrace.value.map { headers + ["traceparent: \($0.traceparent)"] } ?? headers
        let destination = ConnectionPool.Destination(url, trust: trust, publicOnly: publicOnly)
        if destination.scheme == "https" && trust.anchorsPEM == nil { trustStore.refresh() }
        let handle = pool.take(destination)
        defer { pool.give(handle, to: destination) }
        var result = Self.withCStrings(headers) { hs in
            (body ?? []).withUnsafeBufferPointer { b in
                url.absoluteString.withCString { u in
                    method.withCString { m in
                        withOptionalCString(trust.anchorsPEM) { pem, pemLength in
                            withOptionalCString(trust.clientCertificate?.certificatePEM) { cert, certLength in
                                withOptionalCString(trust.clientCertificate?.keyPEM) { key, keyLength in
                                    var q = tb_http_request(method: m, url: u, headers: hs, nheaders: Int32(headers.count),
                                                            body: b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                                                            body_len: b.count, timeout_ms: ms, max_bytes: maxResponseBytes,
                                                            once: once ? 1 : 0, public_only: publicOnly ? 1 : 0, trust: trustStore.pointer,
                                                            ca_pem: pem, ca_pem_len: pemLength, max_idle_s: Int(handle.maxIdle),
                                                            client_cert: cert, client_cert_len: certLength, client_key: key, client_key_len: keyLength)
                                    return tb_http_perform(handle.pointer, &q)
                                }
                            }
                        }
                    }
                }
            }
        }
        defer { tb_http_free(&result) }
        count(result, handle)
        let reason = result.reason.map { String(cString: $0) } ?? "exchange failed"
        switch result.error {
        case 0: break
        case 1: throw .notSent(reason)
        case 3: throw .tooLarge
        case 4: throw .certificateRefused(reason)
        default: throw .unanswered(reason)
        }
        let data = result.body.map { Data(bytes: $0, count: result.body_len) } ?? Data()
        return Reply(status: result.status, retryAfter: result.retry_after >= 0 ? result.retry_after : nil,
                     dpopNonce: result.dpop_nonce.map { String(cString: $0) }, body: data,
                     contentType: result.content_type.map { String(cString: $0) })
    }

    /// Counts the exchange, and learns how long the server keeps an idle connection.
    private func count(_ r: tb_http_result, _ handle: ConnectionPool.Handle) {
        guard r.error == 0 || r.error == 2 else { return }
        if r.connected != 0 { opened.add(1, ordering: .relaxed) } else { reused.add(1, ordering: .relaxed) }
        if r.tls == 1 { full.add(1, ordering: .relaxed) }
        if r.tls == 2 { resumed.add(1, ordering: .relaxed) }
        if r.keep_alive >= 0 { handle.learn(keepAliveTimeout: r.keep_alive, within: settings.keepAlive) }
    }

    /// `strings` as C strings for the duration of `body` (libcurl copies header lines it is given).
    static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { for c in copies { free(c) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?, Int) -> R) -> R {
        guard let s else { return body(nil, 0) }
        return s.withCString { body($0, strlen($0)) }
    }
}
