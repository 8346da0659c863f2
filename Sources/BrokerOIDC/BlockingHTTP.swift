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
        public let body: Data
    }

    public enum Failure: Error, Sendable {
        case transport(String)
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

    public init(timeout: TimeInterval = 10, maxResponseBytes: Int = 256 * 1024) {
        _ = Self.initialized
        timeoutMS = Int(timeout * 1000)
        self.maxResponseBytes = maxResponseBytes
    }

    /// `headers` are `Name: value` lines.
    public func send(_ method: String, _ url: URL, headers: [String], body: [UInt8]? = nil) throws(Failure) -> Reply {
        let handle = idle.withLock { $0.popLast() } ?? Handle()
        defer { idle.withLock { $0.append(handle) } }
        var result = withCStrings(headers) { hs in
            (body ?? []).withUnsafeBufferPointer { b in
                tb_http_perform(handle.pointer, method, url.absoluteString, hs, Int32(headers.count),
                                b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, b.count,
                                timeoutMS, maxResponseBytes)
            }
        }
        defer { tb_http_free(&result) }
        switch result.error {
        case 0: break
        case 2: throw .transport("timeout")
        case 3: throw .tooLarge
        default: throw .transport("connection failed")
        }
        let data = result.body.map { Data(bytes: $0, count: result.body_len) } ?? Data()
        return Reply(status: result.status, retryAfter: result.retry_after >= 0 ? result.retry_after : nil, body: data)
    }

    private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { for c in copies { free(c) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
