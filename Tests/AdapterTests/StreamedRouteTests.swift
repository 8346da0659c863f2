import BrokerCore
import BrokerHTTP
import Foundation
import Synchronization
import Testing

/// Streamed routes through a real MHDServer: an upload read on a worker thread as it arrives,
/// and a download written into a ResponseBodyPipe, both through bounded pipes.
@Suite("Streamed routes", .serialized)
struct StreamedRouteTests {
    static let refusedWrites = Atomic<Int>(0)

    /// The process's resident memory (/proc/self/statm), in bytes.
    static func rss() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        return (Int(text.split(separator: " ").dropFirst().first ?? "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test("a 200 MB streamed download grows the server's memory by less than 16 MB")
    func bigDownload() throws {
        let s = try Self.server()
        defer { s.stop(grace: 1) }
        _ = try Self.curl(["-o", "/dev/null", "http://127.0.0.1:\(s.port)/down/x?n=1000000"])   // warm up
        let before = Self.rss()
        let out = try Self.curl(["-o", "/dev/null", "-w", "%{size_download}", "http://127.0.0.1:\(s.port)/down/x?n=200000000"])
        let grown = Self.rss() - before
        #expect(out == "200000000")
        #expect(grown < 16 << 20, "RSS grew by \(grown) bytes")
        print("stream: 200 MB download, RSS growth \(grown / 1024) KiB")
    }

    @Test("plain routes are served while slow streamed downloads are in flight on every HTTP thread")
    func httpThreadsFree() throws {
        let s = try Self.server()
        defer { s.stop(grace: 1) }
        let slow = (0..<4).map { _ in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            p.arguments = ["-sS", "-o", "/dev/null", "--limit-rate", "1M", "--max-time", "2", "http://127.0.0.1:\(s.port)/down/x?n=100000000"]
            try? p.run()
            return p
        }
        defer { slow.forEach { $0.terminate(); $0.waitUntilExit() } }
        usleep(300_000)
        let started = Date()
        let out = try Self.curl(["--max-time", "2", "http://127.0.0.1:\(s.port)/now"])
        #expect(out == "{\"ok\":true}")
        #expect(Date().timeIntervalSince(started) < 0.5)
    }

    @Test("a caller that goes away mid-download makes write answer false")
    func callerGone() throws {
        let s = try Self.server()
        defer { s.stop(grace: 1) }
        let before = Self.refusedWrites.load(ordering: .relaxed)
        _ = try? Self.curl(["-o", "/dev/null", "--limit-rate", "2M", "--max-time", "1", "http://127.0.0.1:\(s.port)/down/x?n=200000000"])
        let deadline = Date().addingTimeInterval(5)
        while Self.refusedWrites.load(ordering: .relaxed) == before, Date() < deadline { usleep(20_000) }
        #expect(Self.refusedWrites.load(ordering: .relaxed) == before + 1)
    }
    static func server() throws -> MHDServer {
        var r = Router()
        // Counts the upload on a worker thread and answers its length and a checksum.
        r.addStream("/up/{rest*}", maxBodyBytes: 64 << 20) { req in
            .later { respond in
                Thread.detachNewThread {
                    var n = 0, sum: UInt64 = 0
                    var buf = [UInt8](repeating: 0, count: 65536)
                    while let k = buf.withUnsafeMutableBytes({ req.bodyStream?.read(into: $0) }), k > 0 {
                        n += k
                        for i in 0..<k { sum &+= UInt64(buf[i]) }
                    }
                    respond(.json(200, "{\"n\":\(n),\"sum\":\(sum),\"rest\":\"\(req[param: "rest"])\",\"raw\":\"\(req.rawTarget)\"}"))
                }
            }
        }
        // Streams n bytes of 'x' (known length unless chunked=1).
        r.addStream("/down/{rest*}", maxBodyBytes: 0) { req in
            let n = Int(req.queryValue("n") ?? "0") ?? 0
            return .later { respond in
                Thread.detachNewThread {
                    let pipe = ResponseBodyPipe(length: req.queryValue("chunked") == "1" ? nil : n)
                    respond(.streamed(200, headers: [("Content-Type", "application/octet-stream")], pipe: pipe))
                    let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
                    var left = n
                    while left > 0 {
                        let k = min(left, piece.count)
                        guard piece.withUnsafeBytes({ pipe.write(UnsafeRawBufferPointer(rebasing: $0[0..<k])) }) else {
                            StreamedRouteTests.refusedWrites.add(1, ordering: .relaxed)
                            return
                        }
                        left -= k
                    }
                    pipe.finish(complete: true)
                }
            }
        }
        r.add("GET", "/now") { _ in .now(.json(200, "{\"ok\":true}")) }
        let routes = r
        let s = MHDServer(config: HTTPServerConfig(host: "127.0.0.1", port: 0, threads: 2), streams: r) { req in
            guard case .found(let h, let p, _) = routes.match(method: req.method, path: req.path) else { return .now(.json(404, "{}")) }
            var q = req
            q.parameters = p
            return h(q)
        }
        try s.start()
        return s
    }

    static func curl(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-sS", "--max-time", "60"] + args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test("a 50 MB upload is read as it arrives, whole, with the tail and the raw target")
    func upload() throws {
        let s = try Self.server()
        defer { s.stop(grace: 1) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("stream-up-\(getpid())")
        var bytes = [UInt8](repeating: 0, count: 50 << 20)
        for i in stride(from: 0, to: bytes.count, by: 4096) { bytes[i] = UInt8(i / 4096 % 251) }
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let sum = bytes.reduce(UInt64(0)) { $0 &+ UInt64($1) }
        let out = try Self.curl(["--data-binary", "@\(file.path)", "http://127.0.0.1:\(s.port)/up/a/b%20c?x=1"])
        #expect(out == "{\"n\":\(50 << 20),\"sum\":\(sum),\"rest\":\"a/b c\",\"raw\":\"/up/a/b%20c?x=1\"}")
    }

    @Test("a chunked upload over the route's limit is answered 413")
    func uploadTooLarge() throws {
        var r = Router()
        r.addStream("/up/{rest*}", maxBodyBytes: 100_000) { req in
            .later { respond in
                Thread.detachNewThread {
                    var buf = [UInt8](repeating: 0, count: 65536)
                    while let k = buf.withUnsafeMutableBytes({ req.bodyStream?.read(into: $0) }), k > 0 {}
                    Thread.sleep(forTimeInterval: 0.3)
                    respond(.json(200, "{}"))
                }
            }
        }
        let routes = r
        let s = MHDServer(config: HTTPServerConfig(host: "127.0.0.1", port: 0, threads: 2), streams: r) { req in
            guard case .found(let h, _, _) = routes.match(method: req.method, path: req.path) else { return .now(.json(404, "{}")) }
            return h(req)
        }
        try s.start()
        defer { s.stop(grace: 1) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("stream-big-\(getpid())")
        try Data(count: 300_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let out = try Self.curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Transfer-Encoding: chunked", "--data-binary", "@\(file.path)",
                                 "http://127.0.0.1:\(s.port)/up/x"])
        #expect(out == "413")
    }

    @Test("a streamed download arrives whole, with Content-Length or chunked")
    func download() throws {
        let s = try Self.server()
        defer { s.stop(grace: 1) }
        for chunked in ["0", "1"] {
            let out = try Self.curl(["-D", "-", "-o", "/dev/null", "-w", "size=%{size_download}", "http://127.0.0.1:\(s.port)/down/x?n=20000000&chunked=\(chunked)"])
            #expect(out.contains("size=20000000"), "\(out)")
            #expect(out.lowercased().contains(chunked == "1" ? "transfer-encoding: chunked" : "content-length: 20000000"), "\(out)")
        }
    }
}
