import BrokerCore
import Foundation

/// ScriptedUpstreamTransport answers proxied requests from a script, in order, and keeps what
/// was sent (method, URL, headers, the body read whole), so that unit tests of the proxy's
/// driver need no socket. An exhausted script answers `notSent`.
///
/// Thread-safety: any thread; exchanges are recorded in the order they were made.
public final class ScriptedUpstreamTransport: UpstreamTransport, @unchecked Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        public init(_ status: Int, headers: [(name: String, value: String)] = [], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = Array(body.utf8)
        }
    }

    public struct Sent: Sendable {
        public let method: String
        public let url: String
        public let headers: [(name: String, value: String)]
        public let body: [UInt8]
        public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    private let lock = NSLock()
    private var script: [Answer]
    private var log: [Sent] = []

    public init(_ script: [Answer]) { self.script = script }

    /// Every request sent so far.
    public var sent: [Sent] { lock.withLock { log } }

    public func send(_ request: UpstreamRequest, head: (UpstreamHead) -> (any ByteSink)?) throws(UpstreamFailure) {
        var body: [UInt8] = []
        if let b = request.body {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                guard let n = chunk.withUnsafeMutableBytes({ b.read(into: $0) }) else { throw .bodyAbandoned }
                if n == 0 { break }
                body += chunk[0..<n]
            }
        }
        let answer: Answer? = lock.withLock {
            log.append(Sent(method: request.method, url: request.url, headers: request.headers, body: body))
            return script.isEmpty ? nil : script.removeFirst()
        }
        guard let answer else { throw .notSent("script exhausted") }
        guard let sink = head(UpstreamHead(status: answer.status, headers: answer.headers)) else { return }
        let ok = answer.body.withUnsafeBytes { sink.write($0) }
        sink.finish(complete: ok)
    }
}
