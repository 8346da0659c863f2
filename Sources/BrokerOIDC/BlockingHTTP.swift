import BrokerCore
import CCurlShim
import Foundation
import Synchronization

/// BlockingHTTP makes one HTTP exchange with an IdP on the calling thread (a worker thread) with
/// libcurl. Easy handles are pooled and keep their connections alive, so a refresh costs one
/// request on a warm connection and no hand-off to another thread — FoundationNetworking's
/// URLSession, measured in the refresh storm, spent about a fifth of the broker's CPU in its own
/// dispatch queues. It never follows redirects (a token endpoint that redirects is
/// misconfigured, and following would resend credentials), caps the response size, and reports
/// failures with generic reasons that quote nothing from the response.
public final class BlockingHTTP: Sendable {
    public struct Reply: Sendable {
        public let status: Int
        /// Retry-After in seconds, when the IdP sent one in that form.
        public let retryAfter: Int?
        /// The `DPoP-Nonce` header (RFC 9449 §8, §9), when the server sent one.
        public let dpopNonce: String?
        public let body: Data
    }

    /// Why an exchange failed. The reasons are generic on purpose: they quote nothing received.
    public enum Failure: Error, Sendable {
        /// The request provably never reached the server (DNS failure, connection refused or
        /// connect timeout, TLS handshake failure): sending it again cannot repeat anything.
        case notSent(String)
        /// The request may have reached the server and been acted on (timeout after sending,
        /// connection closed or reset, empty reply): sending it again may repeat it.
        case unanswered(String)
        /// The answer exceeded `maxResponseBytes`.
        case tooLarge
    }

    /// An idle libcurl easy handle; used by one thread at a time (the pool hands it out).
    private final class Handle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init() { pointer = tb_http_handle_new() }
        deinit { tb_http_handle_free(pointer) }
    }

    private static let initialized: Void = tb_http_global_init()
    private let idle = Mutex<[Handle]>([])
    private let timeoutMS: Int
    public let maxResponseBytes: Int

    public let settings: HTTPConnectionSettings

    public init(timeout: TimeInterval = 10, maxResponseBytes: Int = 256 * 1024, settings: HTTPConnectionSettings = .init()) {
        _ = Self.initialized
        timeoutMS = Int(timeout * 1000)
        self.maxResponseBytes = maxResponseBytes
        self.settings = settings
    }

    /// `headers` are `Name: value` lines. `timeout` bounds this exchange (nil: the instance's).
    /// `once`: the request leaves at most once — for requests that must never be sent twice (a
    /// refresh-token grant, a code). libcurl silently re-sends a request when a reused connection
    /// closes without an answer; with `once` that second send is refused and the exchange is
    /// `unanswered` (see http.c), so these requests still use warm connections.
    /// `publicOnly`: connect only to public addresses (webhook receivers: no loopback, private,
    /// link-local or metadata address, whatever the DNS answers).
    public func send(_ method: String, _ url: URL, headers: [String], body: [UInt8]? = nil, timeout: TimeInterval? = nil,
                     once: Bool = false, publicOnly: Bool = false, trust: ProviderTrust = .deployment) throws(Failure) -> Reply {
        let ms = timeout.map { max(1, Int($0 * 1000)) } ?? timeoutMS
        // The request this call is made for names its span as the call's parent (W3C Trace Context).
        let headers = CurrentTrace.value.map { headers + ["traceparent: \($0.traceparent)"] } ?? headers
        let handle = idle.withLock { $0.popLast() } ?? Handle()
        defer { idle.withLock { $0.append(handle) } }
        var result = withCStrings(headers) { hs in
            (body ?? []).withUnsafeBufferPointer { b in
                tb_http_perform(handle.pointer, method, url.absoluteString, hs, Int32(headers.count),
                                b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, b.count,
                                ms, maxResponseBytes, once ? 1 : 0, publicOnly ? 1 : 0, settings.caFile)
            }
        }
        defer { tb_http_free(&result) }
        let reason = result.reason.map { String(cString: $0) } ?? "exchange failed"
        switch result.error {
        case 0: break
        case 1: throw .notSent(reason)
        case 3: throw .tooLarge
        default: throw .unanswered(reason)
        }
        let data = result.body.map { Data(bytes: $0, count: result.body_len) } ?? Data()
        return Reply(status: result.status, retryAfter: result.retry_after >= 0 ? result.retry_after : nil,
                     dpopNonce: result.dpop_nonce.map { String(cString: $0) }, body: data)
    }

    private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { for c in copies { free(c) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
