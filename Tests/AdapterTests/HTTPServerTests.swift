import BrokerHTTP
import Foundation
import Synchronization
import Testing

/// RawClient speaks HTTP/1.1 over one TCP connection, so that tests see exactly what the
/// server sends (keep-alive, early refusals).
final class RawClient {
    let fd: Int32

    init(port: UInt16, timeout: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ s: String) { _ = s.withCString { write(fd, $0, strlen($0)) } }

    /// Reads one response (headers + Content-Length body); nil when the server closed.
    func response() -> (status: Int, headers: String, body: String)? {
        var data = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                while data.count < end.upperBound + length {
                    let n = read(fd, &buf, buf.count)
                    if n <= 0 { return nil }
                    data += buf[0..<n]
                }
                let status = Int(head.split(separator: " ")[1]) ?? 0
                return (status, head, String(decoding: data[end.upperBound..<(end.upperBound + length)], as: UTF8.self))
            }
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return nil }
            data += buf[0..<n]
        }
    }
}

// Serialized: the stop stress keeps both cores busy, and the drain test's timings assume they
// are not.
@Suite("HTTP server on libmicrohttpd", .serialized)
struct HTTPServerTests {
    static func server(maxBody: Int = 64, maxHeader: Int = 32 * 1024, maxConnections: Int = 4096) throws -> MHDServer {
        var r = Router()
        r.add("GET", "/now") { _ in .now(.json(200, "{\"ok\":true}")) }
        r.add("POST", "/echo/{id}") { req in .now(.json(200, "{\"id\":\"\(req[param: "id"])\",\"n\":\(req.body.count),\"big\":\(req.bodyTooLarge)}")) }
        r.add("GET", "/headers") { req in
            .now(.json(200, "[" + req.headers.map { "\"\($0.name)=\($0.value)\"" }.joined(separator: ",") + "]"))
        }
        r.add("GET", "/later") { _ in .later { respond in DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { respond(.json(202, "{}")) } } }
        r.add("GET", "/slow") { _ in .later { respond in DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { respond(.json(200, "{}")) } } }
        r.add("POST", "/later") { _ in .later { respond in DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { respond(.json(202, "{}")) } } }
        let router = r
        let s = MHDServer(config: HTTPServerConfig(host: "127.0.0.1", port: 0, threads: 2, maxBodyBytes: maxBody, maxHeaderBytes: maxHeader,
                                                       maxConnections: maxConnections)) { req in
            switch router.match(method: req.method, path: req.path) {
            case .found(let h, let p, _):
                var r = req
                r.parameters = p
                if r.bodyTooLarge { return .now(.json(413, "{}")) }
                return h(r)
            case .methodNotAllowed: return .now(.json(405, "{}"))
            case .notFound: return .now(.json(404, "{}"))
            }
        }
        try s.start()
        return s
    }

    @Test("stopped again and again while clients connect and send: the process never aborts")
    func stopUnderLoad() async throws {
        // libmicrohttpd 0.9.75's MHD_quiesce_daemon and its epoll workers both take the listening
        // socket out of the workers' epoll sets, unguarded; the loser gets ENOENT and MHD aborts
        // the process (daemon.c:5531 on the stopping thread, :4976 on a worker). Seen once in a
        // full test run, a broker stopped by SIGTERM right after a request. The daemons now have
        // no listening socket (the Acceptor has it) and nothing quiesces; should a stop hand a
        // socket back through MHD again, this is the test that catches it. With a quiesce in
        // the stop, its drafts aborted the test process in 3 of 14 runs (this form: 1 of 4).
        // It blocks (stops, waits for its clients): on a thread of its own, not on one of the
        // few threads that run the other tests' tasks.
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
            Thread.detachNewThread {
                do {
                    for _ in 0..<300 { try Self.stopWhileBusy() }
                    done.resume()
                } catch {
                    done.resume(throwing: error)
                }
            }
        }
    }

    /// One server, six clients sending to it (half reconnecting for every request, half keeping
    /// their connection), stopped 10 ms in; the clients end once the stop has returned.
    static func stopWhileBusy() throws {
        let s = try server()
        let port = s.port
        let stopping = Atomic<Bool>(false)
        let clients = DispatchGroup()
        for k in 0..<6 {
            DispatchQueue.global().async(group: clients) {
                while !stopping.load(ordering: .relaxed) {
                    guard let c = try? RawClient(port: port) else { continue }
                    repeat {
                        c.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
                    } while c.response() != nil && k % 2 == 0 && !stopping.load(ordering: .relaxed)
                }
            }
        }
        usleep(10_000)
        s.stop(grace: 0)
        stopping.store(true, ordering: .relaxed)
        clients.wait()
    }

    @Test("reloaded again and again while clients connect and send: every request is answered, by the old daemon or the new")
    func reloadUnderLoad() async throws {
        // A reload used to take the listening socket from the old daemon with MHD_quiesce_daemon,
        // which races libmicrohttpd 0.9.75's epoll workers and can abort the process (see
        // stopUnderLoad); the Acceptor now only sends new connections to the new daemon.
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
            Thread.detachNewThread {
                do {
                    let (answered, lost, told) = try Self.reloadWhileBusy(times: 300)
                    #expect(lost == 0, "\(lost) requests unanswered, \(answered) answered")
                    #expect(answered > 300, "the clients were not busy: \(answered) answers")
                    #expect(told > 0, "no kept-alive client was told to go: the reloads did not happen")
                    done.resume()
                } catch {
                    done.resume(throwing: error)
                }
            }
        }
    }

    /// One server, six clients sending to it (half reconnecting for every request, half keeping
    /// their connection until an answer says `Connection: close`; two of them ask for answers
    /// given later, so reloads meet suspended requests), reloaded `times` times 5 ms apart: the
    /// requests answered, those that got no answer or a refused connection, and the answers
    /// that told a kept-alive client to go (an old daemon's).
    static func reloadWhileBusy(times: Int) throws -> (answered: Int, lost: Int, told: Int) {
        let s = try server()
        defer { s.stop() }
        let port = s.port
        let stopping = Atomic<Bool>(false), answered = Atomic<Int>(0), lost = Atomic<Int>(0), told = Atomic<Int>(0)
        let clients = DispatchGroup()
        for k in 0..<6 {
            DispatchQueue.global().async(group: clients) {
                while !stopping.load(ordering: .relaxed) {
                    guard let c = try? RawClient(port: port) else {
                        lost.add(1, ordering: .relaxed)
                        continue
                    }
                    while true {
                        c.send(k >= 4 ? "POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx" : "GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
                        guard let r = c.response(), r.status == (k >= 4 ? 202 : 200) else {
                            lost.add(1, ordering: .relaxed)
                            break
                        }
                        answered.add(1, ordering: .relaxed)
                        let close = r.headers.contains("Connection: close")
                        if close && k % 2 == 0 { told.add(1, ordering: .relaxed) }
                        if k % 2 == 1 || close || stopping.load(ordering: .relaxed) { break }
                    }
                }
            }
        }
        for _ in 0..<times {
            try s.reload(grace: 5)
            usleep(5_000)
        }
        stopping.store(true, ordering: .relaxed)
        clients.wait()
        return (answered.load(ordering: .relaxed), lost.load(ordering: .relaxed), told.load(ordering: .relaxed))
    }

    @Test("at the connection limit new connections, a burst of them, wait in the backlog, unanswered but not closed, and are served as slots free")
    func connectionLimit() throws {
        let s = try Self.server(maxConnections: 2)
        defer { s.stop() }
        func get(_ c: RawClient) -> Int? {
            c.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
            return c.response()?.status
        }
        func patience(_ c: RawClient, _ seconds: Int) {
            var tv = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        var held = [try RawClient(port: s.port), try RawClient(port: s.port)]
        for c in held { #expect(get(c) == 200) }
        // Three at once: connected (the kernel's backlog), none answered while two are held.
        var waiting = try (0..<3).map { _ in try RawClient(port: s.port, timeout: 1) }
        for c in waiting { c.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n") }
        #expect(waiting[0].response() == nil, "answered beyond the limit")
        held.removeAll()   // both slots free at once: two of the three are taken in, not three
        for c in waiting { patience(c, 5) }
        #expect(waiting[0].response()?.status == 200 && waiting[1].response()?.status == 200, "closed instead of waiting, or never served")
        patience(waiting[2], 1)
        #expect(waiting[2].response() == nil, "a third connection served beyond the limit, or closed")
        let third = waiting[2]
        waiting.removeFirst()   // closes the first
        patience(third, 5)
        #expect(third.response()?.status == 200, "the third never served once a slot freed")
    }

    @Test("connections are kept alive across requests, including ones answered later")
    func keepAlive() throws {
        let s = try Self.server()
        defer { s.stop() }
        let c = try RawClient(port: s.port)
        for path in ["/now", "/later", "/now"] {
            c.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = try #require(c.response())
            #expect(r.status == (path == "/later" ? 202 : 200))
            #expect(!r.headers.lowercased().contains("connection: close"))
            #expect(r.headers.lowercased().contains("x-request-id:"))
        }
    }

    @Test("routes capture segments; unknown paths 404; wrong methods 405")
    func routing() throws {
        let s = try Self.server()
        defer { s.stop() }
        let c = try RawClient(port: s.port)
        c.send("POST /echo/abc:def HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz")
        #expect(c.response()?.body == "{\"id\":\"abc:def\",\"n\":3,\"big\":false}")
        c.send("GET /echo/abc HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(c.response()?.status == 405)
        c.send("GET /echo/abc/more HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(c.response()?.status == 404)
        c.send("GET //now HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(c.response()?.status == 404)
    }

    @Test("a declared body over the limit is refused before it is read; a chunked one after")
    func bodyLimit() throws {
        let s = try Self.server(maxBody: 64)
        defer { s.stop() }
        let c = try RawClient(port: s.port)
        c.send("POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        #expect(c.response()?.status == 413)
        let d = try RawClient(port: s.port)
        let chunk = String(repeating: "a", count: 100)
        d.send("POST /echo/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n\(chunk)\r\n0\r\n\r\n")
        #expect(d.response()?.status == 413)
    }

    @Test("headers over the limit are refused with 431 and never reach a handler")
    func headerLimit() throws {
        let s = try Self.server(maxHeader: 8192)
        defer { s.stop() }
        let c = try RawClient(port: s.port)
        c.send("GET /now HTTP/1.1\r\nHost: x\r\nX-Filler: \(String(repeating: "a", count: 16_000))\r\n\r\n")
        #expect(c.response()?.status == 431)
    }

    @Test("handlers see the listed headers, names lowercased whatever their case, the first of a repeated one; others are not copied out")
    func listedHeaders() throws {
        let s = try Self.server()
        defer { s.stop() }
        let c = try RawClient(port: s.port)
        c.send("GET /headers HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: Bearer one\r\nX-Other: no\r\nauthorization: Bearer two\r\nAccept: application/json\r\n\r\n")
        let seen = try JSONSerialization.jsonObject(with: Data((c.response()?.body ?? "").utf8)) as? [String]
        #expect(seen.map(Set.init) == ["authorization=Bearer one", "accept=application/json"])
        // Refused at the front door (a bad target) before any route: the caller's id still answers.
        c.send("GET /now%00 HTTP/1.1\r\nHost: x\r\nX-Request-Id: early-1\r\n\r\n")
        #expect(c.response()?.headers.contains("X-Request-Id: early-1") == true)
    }

    @Test("the caller's sane X-Request-Id is kept, an unsafe one replaced")
    func requestIDs() throws {
        let s = try Self.server()
        defer { s.stop() }
        let c = try RawClient(port: s.port)
        c.send("GET /now HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc-123\r\n\r\n")
        #expect(c.response()?.headers.contains("X-Request-Id: abc-123") == true)
        c.send("GET /now HTTP/1.1\r\nHost: x\r\nX-Request-Id: a b\"c\r\n\r\n")
        #expect(c.response()?.headers.contains("a b\"c") == false)
    }

    @Test("stop waits for every suspended request, also one arriving on a kept-alive connection meanwhile, and tells clients to go")
    func stopDrains() async throws {
        let s = try Self.server()
        let first = try RawClient(port: s.port), second = try RawClient(port: s.port)
        second.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(second.response()?.status == 200)   // kept alive, idle
        first.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        // Stop once the slow request is suspended (a fixed wait lost that race on a loaded machine).
        let deadline = Date().addingTimeInterval(5)
        while s.suspendedRequests == 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(s.suspendedRequests == 1)
        let started = Date()
        let stopped = Task.detached { s.stop(grace: 5); return Date().timeIntervalSince(started) }
        try await Task.sleep(for: .milliseconds(150))
        second.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")   // arrives while the server is closing
        let a = first.response(), b = second.response()
        #expect(a?.status == 200 && a?.headers.contains("Connection: close") == true, "\(String(describing: a))")
        #expect(b?.status == 200 || b?.status == 503, "\(String(describing: b))")
        #expect(b?.headers.contains("Connection: close") == true)
        #expect(await stopped.value >= 0.3, "stop returned before the suspended request was answered (0.5 s after it was suspended)")
    }

    @Test("a request whose body arrives while a stop begins is answered, 503 once the stop refuses, or closed with the daemon, never left suspended (a suspended connection at MHD_stop_daemon aborts the process)")
    func stopMeetsLateBody() async throws {
        for _ in 0..<20 {
            let s = try Self.server()
            let c = try RawClient(port: s.port)
            c.send("POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n")   // headers: the first call
            try await Task.sleep(for: .milliseconds(30))
            let stopped = Task.detached { s.stop(grace: 0) }   // nothing suspended: refusing at once, stopped 50 ms later
            try await Task.sleep(for: .milliseconds(10))
            c.send("x")   // the body, then the handler answers later
            // 202: the body came before the stop refused (a loaded machine), and the stop waited for it.
            let r = c.response()
            #expect(r == nil || r?.status == 503 || r?.status == 202, "\(String(describing: r))")
            await stopped.value
        }
    }

    @Test("the stop also waits for what the old daemon of a recent reload still has suspended")
    func stopAfterReload() async throws {
        let s = try Self.server()
        let c = try RawClient(port: s.port)
        c.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")   // answered 0.5 s later, on the first daemon
        let deadline = Date().addingTimeInterval(5)
        while s.suspendedRequests == 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try s.reload(grace: 30)
        let started = Date()
        let stopped = Task.detached { s.stop(grace: 5); return Date().timeIntervalSince(started) }
        let r = c.response()
        #expect(r?.status == 200 && r?.headers.contains("Connection: close") == true, "\(String(describing: r))")
        #expect(await stopped.value >= 0.3, "stop returned while the old daemon still had a request suspended")
        #expect(s.suspendedRequests == 0)
    }
}
