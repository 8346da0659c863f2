import BrokerCore
import BrokerOIDC
import Foundation
import Synchronization
import Testing

/// The outbound proxy's libcurl transport against a real loopback server (`WireServer`), which
/// shows what went on the wire and answers with exact bytes.
@Suite("Curl upstream transport", .serialized)
struct CurlUpstreamTransportTests {
    /// A sink that keeps (or only counts) what it is given, may refuse after some writes, and
    /// may be slow; it records each `finish`.
    final class Sink: ByteSink, @unchecked Sendable {
        private let lock = NSLock()
        private(set) var bytes: [UInt8] = []
        private(set) var total = 0
        private(set) var writes = 0
        private(set) var finishes: [Bool] = []
        let keep: Bool, accept: Int, slow: Bool

        init(keep: Bool = true, accept: Int = .max, slow: Bool = false) {
            self.keep = keep
            self.accept = accept
            self.slow = slow
        }

        func write(_ b: UnsafeRawBufferPointer) -> Bool {
            let (n, ok) = lock.withLock { () -> (Int, Bool) in
                writes += 1
                guard writes <= accept else { return (writes, false) }
                total += b.count
                if keep { bytes += b }
                return (writes, true)
            }
            if slow && n % 16 == 0 { usleep(1000) }
            return ok
        }

        func finish(complete: Bool) { lock.withLock { finishes.append(complete) } }
        var text: String { String(decoding: lock.withLock { bytes }, as: UTF8.self) }
    }

    /// A body of unknown length read in uneven pieces; abandoned at `abandonAt` bytes if given.
    final class Dribble: ByteSource, @unchecked Sendable {
        let bytes: [UInt8]
        let abandonAt: Int?
        private var at = 0

        init(_ bytes: [UInt8], abandonAt: Int? = nil) {
            self.bytes = bytes
            self.abandonAt = abandonAt
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
            if let a = abandonAt, at >= a { return nil }
            let n = min(buffer.count, 7919, bytes.count - at)
            guard n > 0 else { return 0 }
            bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + at, byteCount: n) }
            at += n
            return n
        }

        var length: Int? { nil }
        var replayable: Bool { false }
        func rewind() -> Bool { false }
    }

    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    static func request(_ server: WireServer, _ path: String = "/", method: String = "GET", headers: [(name: String, value: String)] = [],
                        body: (any ByteSource)? = nil, totalTimeout: Double = 10, maxResponseBytes: Int = 1 << 30) -> UpstreamRequest {
        UpstreamRequest(method: method, url: "http://127.0.0.1:\(server.port)\(path)", headers: headers, body: body,
                        allowPrivateAddresses: true, connectTimeout: 2, totalTimeout: totalTimeout, maxResponseBytes: maxResponseBytes)
    }

    /// Sends and keeps the head and the body (nil when the head was not answered with a sink).
    static func exchange(_ t: CurlUpstreamTransport, _ r: UpstreamRequest, sink: Sink = Sink()) throws(UpstreamFailure) -> (UpstreamHead?, Sink) {
        var head: UpstreamHead?
        try t.send(r) { h in
            head = h
            return sink
        }
        return (head, sink)
    }

    static func pattern(_ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }

    @Test("a GET arrives with the caller's headers in order, and libcurl adds none of its own (no Accept, no Expect)")
    func getAsGiven() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        let t = CurlUpstreamTransport()
        let given: [(name: String, value: String)] = [("Authorization", "Bearer abc"), ("X-One", "1"), ("X-Empty", ""), ("X-One", "again")]
        let (head, sink) = try Self.exchange(t, Self.request(server, "/v1/items?page=2", headers: given))
        #expect(head?.status == 200)
        #expect(sink.text == "ok" && sink.finishes == [true])
        let seen = try #require(server.seen.first)
        #expect(seen.requestLine == "GET /v1/items?page=2 HTTP/1.1")
        #expect(seen.headers.map { "\($0.name): \($0.value)" } == ["Host: 127.0.0.1:\(server.port)"] + given.map { "\($0.name): \($0.value)" })
    }

    @Test("a POST of known length arrives whole with Content-Length and the caller's Accept, without Expect or a Content-Type of libcurl's")
    func postKnownLength() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        let body = Self.pattern(3 << 20)
        let given: [(name: String, value: String)] = [("Content-Type", "application/x-test"), ("Accept", "application/json")]
        let (head, _) = try Self.exchange(CurlUpstreamTransport(), Self.request(server, "/up", method: "POST", headers: given, body: BufferedBody(body)))
        #expect(head?.status == 200)
        let seen = try #require(server.seen.first)
        #expect(seen.requestLine == "POST /up HTTP/1.1")
        #expect(seen.headers.map { "\($0.name): \($0.value)" }
                == ["Host: 127.0.0.1:\(server.port)", "Content-Type: application/x-test", "Accept: application/json", "Content-Length: \(body.count)"])
        #expect(!seen.chunked && seen.body == body)
    }

    @Test("a body of unknown length goes chunked and arrives whole; a caller's own framing headers are not passed on")
    func postChunked() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        let body = Self.pattern(300_000)
        let given: [(name: String, value: String)] = [("Content-Length", "5"), ("Expect", "100-continue"), ("X-Trace", "t")]
        let (head, _) = try Self.exchange(CurlUpstreamTransport(), Self.request(server, "/up", method: "PATCH", headers: given, body: Dribble(body)))
        #expect(head?.status == 200)
        let seen = try #require(server.seen.first)
        #expect(seen.requestLine == "PATCH /up HTTP/1.1")
        #expect(seen.chunked && seen.body == body)
        #expect(seen.headers.map(\.name) == ["Host", "Transfer-Encoding", "X-Trace"])
    }

    @Test("status and every header come back in order, repeated Set-Cookie both, interim 1xx heads skipped")
    func headInOrder() throws {
        let server = WireServer { _ in
            .bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                   + "HTTP/1.1 201 Created\r\nSet-Cookie: a=1\r\nX-B:  two  \r\nSet-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello")
        }
        let (head, sink) = try Self.exchange(CurlUpstreamTransport(), Self.request(server))
        #expect(head?.status == 201)
        #expect(head?.headers.map { "\($0.name)=\($0.value)" } == ["Set-Cookie=a=1", "X-B=two", "Set-Cookie=b=2", "Content-Length=5"])
        #expect(sink.text == "hello" && sink.finishes == [true])
    }

    @Test("a 302 comes back as it is: not followed")
    func redirectNotFollowed() throws {
        let server = WireServer { _ in .bytes("HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n") }
        let (head, sink) = try Self.exchange(CurlUpstreamTransport(), Self.request(server, "/here"))
        #expect(head?.status == 302 && head?.header("location") == "/elsewhere")
        #expect(sink.finishes == [true] && sink.total == 0)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(server.seen.map(\.requestLine) == ["GET /here HTTP/1.1"])
    }

    @Test("a header value with a line break, or a method that is not a token, is refused before anything is sent")
    func injectionRefused() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        let t = CurlUpstreamTransport()
        #expect(throws: UpstreamFailure.notSent("not an HTTP header")) {
            try Self.exchange(t, Self.request(server, headers: [("X-A", "1\r\nX-Injected: 1")]))
        }
        #expect(throws: UpstreamFailure.notSent("not an HTTP method")) { try Self.exchange(t, Self.request(server, method: "GET / HTTP/1.1\r\n")) }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(server.connections == 0)
    }

    @Test("a HEAD is answered with its head alone, though it names a Content-Length")
    func headMethod() throws {
        let server = WireServer { _ in .bytes("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n") }
        let (head, sink) = try Self.exchange(CurlUpstreamTransport(), Self.request(server, method: "HEAD", totalTimeout: 2))
        #expect(head?.header("Content-Length") == "1000")
        #expect(sink.total == 0 && sink.finishes == [true])
        #expect(server.seen.first?.requestLine == "HEAD / HTTP/1.1")
    }

    @Test("a loopback address without allowPrivateAddresses is refused before any connection")
    func privateAddressRefused() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        var r = Self.request(server)
        r.allowPrivateAddresses = false
        #expect(throws: UpstreamFailure.addressRefused) { try Self.exchange(CurlUpstreamTransport(), r) }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(server.connections == 0)
    }

    @Test("a port nobody listens on: not sent")
    func nobodyListening() throws {
        let (fd, port) = WireServer.listenLoopback(listening: false)
        defer { close(fd) }
        let r = UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(port)/", headers: [], allowPrivateAddresses: true, connectTimeout: 2)
        do {
            _ = try Self.exchange(CurlUpstreamTransport(), r)
            Issue.record("an answer came")
        } catch {
            guard case .notSent = error else { Issue.record("\(error) is not notSent"); return }
        }
    }

    @Test("a server that accepts and never answers: unanswered within the total timeout")
    func silentServer() throws {
        let server = WireServer { _ in .silent }
        let started = Date()
        do {
            _ = try Self.exchange(CurlUpstreamTransport(), Self.request(server, totalTimeout: 1))
            Issue.record("an answer came")
        } catch {
            guard case .unanswered = error else { Issue.record("\(error) is not unanswered"); return }
        }
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(server.seen.count == 1)
    }

    @Test("a body longer than maxResponseBytes is cut there and the sink finished incomplete")
    func responseCut() throws {
        let server = WireServer { _ in .stream(head: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", count: 1_000_000) }
        let (head, sink) = try Self.exchange(CurlUpstreamTransport(), Self.request(server, maxResponseBytes: 100_000))
        #expect(head?.status == 200)
        #expect(sink.total == 100_000)
        #expect(sink.finishes == [false])
    }

    @Test("an upstream that breaks off mid-body: the sink is finished incomplete, the head was delivered, nothing thrown")
    func upstreamBreaksOff() throws {
        let server = WireServer { _ in .closing("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this") }
        let t = CurlUpstreamTransport()
        let (head, sink) = try Self.exchange(t, Self.request(server, totalTimeout: 2))
        #expect(head?.status == 200)
        #expect(sink.text == "only this" && sink.finishes == [false])
        #expect(t.idleConnections == 0)
    }

    @Test("a sink whose reader is gone stops the download at once")
    func readerGone() throws {
        let server = WireServer { _ in .stream(head: "HTTP/1.1 200 OK\r\nContent-Length: 200000000\r\n\r\n", count: 200_000_000) }
        let started = Date()
        let (head, sink) = try Self.exchange(CurlUpstreamTransport(), Self.request(server), sink: Sink(accept: 2))
        #expect(head?.status == 200)
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(sink.writes == 3 && sink.finishes == [false])
        Thread.sleep(forTimeInterval: 0.2)
        #expect(server.streamed < 20 << 20, "the server wrote \(server.streamed) bytes")
    }

    @Test("a head answered with no sink drops the body; the connection serves the next request")
    func headDropsBody() throws {
        let server = WireServer { _ in .bytes("HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nnot for you!") }
        let t = CurlUpstreamTransport()
        var status: Int?
        try t.send(Self.request(server)) { h in
            status = h.status
            return nil
        }
        #expect(status == 401)
        #expect(t.idleConnections == 1)
        let (head, sink) = try Self.exchange(t, Self.request(server))
        #expect(head?.status == 401 && sink.text == "not for you!")
        #expect(server.connections == 1)
    }

    @Test("a request body abandoned by its caller: bodyAbandoned, and the handle is not kept")
    func bodyAbandoned() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        let t = CurlUpstreamTransport()
        #expect(throws: UpstreamFailure.bodyAbandoned) {
            try Self.exchange(t, Self.request(server, method: "POST", body: Dribble(Self.pattern(100_000), abandonAt: 20_000)))
        }
        #expect(t.idleConnections == 0)
    }

    @Test("a kept connection is reused for a second request to the same origin")
    func keptConnectionReused() throws {
        let server = WireServer { _ in .bytes(Self.ok) }
        let t = CurlUpstreamTransport()
        _ = try Self.exchange(t, Self.request(server, "/a"))
        _ = try Self.exchange(t, Self.request(server, "/b", method: "POST", body: BufferedBody(Array("x".utf8))))
        #expect(server.seen.map(\.connection) == [1, 1])
        #expect(server.connections == 1)
    }

    @Test("over TLS the configured CA file is trusted; a server certificate it did not sign: notSent")
    func tls() throws {
        let pki = try ProviderTLSTests.PKI()
        let server = try ProviderTLSTests.Server(pki)
        let r = UpstreamRequest(method: "GET", url: "https://localhost:\(server.port)/", headers: [], allowPrivateAddresses: true,
                                connectTimeout: 5, totalTimeout: 5)
        let (head, sink) = try Self.exchange(CurlUpstreamTransport(settings: HTTPConnectionSettings(caFile: pki.path("ca1.pem"))), r)
        #expect(head?.status == 200 && sink.total > 0 && sink.finishes == [true])
        do {
            _ = try Self.exchange(CurlUpstreamTransport(settings: HTTPConnectionSettings(caFile: pki.path("ca2.pem"))), r)
            Issue.record("an answer came")
        } catch {
            guard case .notSent = error else { Issue.record("\(error) is not notSent"); return }
        }
    }

    @Test("a connection idle past the server's Keep-Alive timeout (less a second) is not reused")
    func keepAliveHeeded() throws {
        let server = WireServer { _ in .bytes("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2, max=100\r\nContent-Length: 2\r\n\r\nok") }
        let t = CurlUpstreamTransport()
        _ = try Self.exchange(t, Self.request(server))
        Thread.sleep(forTimeInterval: 2.1)   // libcurl counts idle time in whole seconds
        _ = try Self.exchange(t, Self.request(server))
        #expect(server.seen.map(\.connection) == [1, 2])
    }

    /// The process's resident memory (VmRSS of /proc/self/status), in bytes.
    static func rss() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    @Test("a 200 MB download through a slow sink grows memory by less than 8 MB")
    func bigDownloadFlat() throws {
        let n = 200_000_000
        let server = WireServer { seen in
            let count = seen.requestLine.contains("/warm") ? 1_000_000 : n
            return .stream(head: "HTTP/1.1 200 OK\r\nContent-Length: \(count)\r\n\r\n", count: count)
        }
        let t = CurlUpstreamTransport()
        _ = try Self.exchange(t, Self.request(server, "/warm"), sink: Sink(keep: false, slow: true))   // warm up
        let before = Self.rss()
        let (head, sink) = try Self.exchange(t, Self.request(server, totalTimeout: 60), sink: Sink(keep: false, slow: true))
        let grown = Self.rss() - before
        #expect(head?.status == 200)
        #expect(sink.total == n && sink.finishes == [true])
        #expect(grown < 8 << 20, "RSS grew by \(grown) bytes")
    }
}
