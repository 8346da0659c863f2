import Foundation
import Synchronization

/// WireServer is a loopback HTTP/1.1 server for client tests that keeps each request exactly as
/// it came on the wire (request line, every header line in order, the body with its framing
/// noted) and answers with the bytes a test writes itself: interim heads, repeated headers,
/// silence, or a long body written as fast as the client takes it.
///
/// Thread-safety: a thread per connection; what was seen is kept under one lock.
final class WireServer: @unchecked Sendable {
    struct Seen: Sendable {
        let connection: Int
        let requestLine: String
        let headers: [(name: String, value: String)]
        let body: [UInt8]
        let chunked: Bool

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    enum Answer: Sendable {
        case bytes(String)
        /// These bytes, then the connection is closed.
        case closing(String)
        /// Never answers; the connection stays open until the client closes it.
        case silent
        /// `head` then `count` bytes of "x", written as fast as the client reads them.
        case stream(head: String, count: Int)
    }

    let port: UInt16
    private let fd: Int32
    private let answer: @Sendable (Seen) -> Answer
    private let state = Mutex<(seen: [Seen], connections: Int, streamed: Int)>(([], 0, 0))

    init(_ answer: @escaping @Sendable (Seen) -> Answer) {
        (fd, port) = Self.listenLoopback()
        self.answer = answer
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    var seen: [Seen] { state.withLock { $0.seen } }
    var connections: Int { state.withLock { $0.connections } }
    /// Body bytes written by `.stream` answers, all together.
    var streamed: Int { state.withLock { $0.streamed } }

    /// A listening TCP socket on 127.0.0.1 and an ephemeral port.
    static func listenLoopback(listening: Bool = true) -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        if listening { listen(fd, 16) }
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    private func acceptLoop() {
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 { return }
            let n = state.withLock { $0.connections += 1; return $0.connections }
            Thread.detachNewThread { [self] in serve(Reader(c), connection: n) }
        }
    }

    private func serve(_ r: Reader, connection: Int) {
        defer { close(r.fd) }
        while let seen = readRequest(r, connection: connection) {
            state.withLock { $0.seen.append(seen) }
            switch answer(seen) {
            case .bytes(let text):
                guard sendAll(r.fd, Array(text.utf8)) else { return }
            case .closing(let text):
                _ = sendAll(r.fd, Array(text.utf8))
                return
            case .silent:
                continue
            case .stream(let head, let count):
                guard sendAll(r.fd, Array(head.utf8)) else { return }
                let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
                var left = count
                while left > 0 {
                    let k = min(left, piece.count)
                    guard sendAll(r.fd, piece[0..<k]) else { return }
                    state.withLock { $0.streamed += k }
                    left -= k
                }
            }
        }
    }

    private func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        Array(bytes).withUnsafeBytes { b in
            var at = 0
            while at < b.count {
                let n = send(fd, b.baseAddress! + at, b.count - at, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                at += n
            }
            return true
        }
    }

    private func readRequest(_ r: Reader, connection: Int) -> Seen? {
        guard let requestLine = r.line(), !requestLine.isEmpty else { return nil }
        var headers: [(name: String, value: String)] = []
        while let line = r.line(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let chunked = headers.contains { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased() == "chunked" }
        var body: [UInt8] = []
        if chunked {
            while let size = r.line().flatMap({ Int($0, radix: 16) }) {
                guard size > 0 else {
                    while let trailer = r.line(), !trailer.isEmpty {}
                    break
                }
                guard let piece = r.bytes(size), r.line() != nil else { return nil }
                body += piece
            }
        } else if let length = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }) {
            guard let all = r.bytes(length) else { return nil }
            body = all
        }
        return Seen(connection: connection, requestLine: requestLine, headers: headers, body: body, chunked: chunked)
    }

    /// A buffered reader of one connection.
    private final class Reader {
        let fd: Int32
        private var buffer: [UInt8] = []
        init(_ fd: Int32) { self.fd = fd }

        private func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { return false }
            buffer += chunk[0..<n]
            return true
        }

        /// One line without its CRLF; nil when the connection closed first.
        func line() -> String? {
            while true {
                if let i = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = buffer[..<i].last == UInt8(ascii: "\r") ? buffer[..<(i - 1)] : buffer[..<i]
                    defer { buffer.removeFirst(i + 1) }
                    return String(decoding: line, as: UTF8.self)
                }
                guard fill() else { return nil }
            }
        }

        func bytes(_ n: Int) -> [UInt8]? {
            while buffer.count < n { guard fill() else { return nil } }
            defer { buffer.removeFirst(n) }
            return Array(buffer[..<n])
        }
    }
}
