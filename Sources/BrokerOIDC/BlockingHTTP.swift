import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// BlockingHTTP makes one HTTP exchange with an IdP and waits for it (callers are executor
/// threads). It never follows redirects (a token endpoint that redirects is misconfigured, and
/// following would resend credentials), caps the response size, and turns failures into
/// generic reasons that quote nothing from the response.
public final class BlockingHTTP: Sendable {
    public struct Reply: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: Data
    }

    public enum Failure: Error, Sendable {
        case transport(String)
        case tooLarge
    }

    let session: URLSession
    public let maxResponseBytes: Int

    public init(timeout: TimeInterval = 10, maxConnectionsPerHost: Int = 64, maxResponseBytes: Int = 256 * 1024) {
        let c = URLSessionConfiguration.ephemeral
        c.timeoutIntervalForRequest = timeout
        c.timeoutIntervalForResource = timeout * 2
        c.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        c.httpCookieAcceptPolicy = .never
        c.httpShouldSetCookies = false
        c.requestCachePolicy = .reloadIgnoringLocalCacheData
        c.urlCache = nil
        session = URLSession(configuration: c, delegate: NoRedirects(), delegateQueue: nil)
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: URLRequest) throws(Failure) -> Reply {
        let box = ReplyBox()
        let done = DispatchSemaphore(value: 0)
        session.dataTask(with: request) { data, response, error in
            box.set(data, response, error)
            done.signal()
        }.resume()
        done.wait()
        let (data, response, error) = box.get()
        if let error { throw .transport((error as NSError).code == NSURLErrorTimedOut ? "timeout" : "connection failed") }
        guard let http = response as? HTTPURLResponse else { throw .transport("no HTTP response") }
        let body = data ?? Data()
        guard body.count <= maxResponseBytes else { throw .tooLarge }
        var headers: [String: String] = [:]
        for (k, v) in http.allHeaderFields { headers[String(describing: k).lowercased()] = String(describing: v) }
        return Reply(status: http.statusCode, headers: headers, body: body)
    }
}

private final class ReplyBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (Data?, URLResponse?, (any Error)?) = (nil, nil, nil)
    func set(_ d: Data?, _ r: URLResponse?, _ e: (any Error)?) { lock.withLock { value = (d, r, e) } }
    func get() -> (Data?, URLResponse?, (any Error)?) { lock.withLock { value } }
}

private final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
