import BrokerOIDC
import Foundation
import Synchronization
import Testing

/// A request that must leave once (a refresh-token grant, a code), sent on a kept connection
/// that then dies under it — closed, reset, or silent past the timeout — is never sent again:
/// libcurl re-sends on a new connection when a reused one fails before any answer, and the
/// server may well have acted on the first copy. A raw TCP server counts the copies it receives.
@Suite(.serialized)
struct PooledConnectionFaultTests {
    enum Fault: String, CaseIterable, Sendable { case close, reset, silent }

    /// Answers the first request of its first connection with 200 and keeps it open; the next
    /// request on that connection meets `fault`. Later connections are answered normally.
    final class FaultyServer: @unchecked Sendable {
        let fd: Int32
        let port: UInt16
        let copies = Mutex(0)   // requests for /grant received, all connections together
        let onKept = Mutex(0)   // of which on the first (kept) connection
        let connections = Mutex(0)
        private let fault: Fault

        init(_ fault: Fault) throws {
            self.fault = fault
            (fd, port) = WireServer.listenLoopback()
            Thread.detachNewThread { [self] in acceptLoop() }
        }

        deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

        private func acceptLoop() {
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { return }
                let n = connections.withLock { $0 += 1; return $0 }
                Thread.detachNewThread { [self] in serve(c, first: n == 1) }
            }
        }

        private func serve(_ c: Int32, first: Bool) {
            var served = 0
            while let path = readRequest(c) {
                if path == "/grant" {
                    copies.withLock { $0 += 1 }
                    if first { onKept.withLock { $0 += 1 } }
                }
                if first && served == 1 {
                    switch fault {
                    case .close: close(c)
                    case .reset:
                        var l = linger(l_onoff: 1, l_linger: 0)
                        setsockopt(c, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
                        close(c)
                    case .silent:
                        Thread.sleep(forTimeInterval: 3)
                        close(c)
                    }
                    return
                }
                let body = "{}"
                let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                _ = answer.withCString { write(c, $0, strlen($0)) }
                served += 1
            }
            close(c)
        }

        /// Reads one request's head and its Content-Length body; its path, nil when closed.
        private func readRequest(_ c: Int32) -> String? {
            var data = [UInt8]()
            var byte = [UInt8](repeating: 0, count: 1)
            while data.suffix(4) != Array("\r\n\r\n".utf8) {
                guard read(c, &byte, 1) == 1 else { return nil }
                data.append(byte[0])
            }
            let head = String(decoding: data, as: UTF8.self)
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            var body = [UInt8](repeating: 0, count: max(1, length))
            var got = 0
            while got < length {
                let r = body.withUnsafeMutableBytes { read(c, $0.baseAddress! + got, length - got) }
                if r <= 0 { return nil }
                got += r
            }
            return head.split(separator: " ").dropFirst().first.map(String.init)
        }
    }

    @Test("a grant on a kept connection that is closed, reset or goes silent: sent once, unanswered", arguments: Fault.allCases)
    func onceOnKeptConnection(_ fault: Fault) throws {
        let server = try FaultyServer(fault)
        let http = BlockingHTTP(timeout: 1)
        let base = "http://127.0.0.1:\(server.port)"
        #expect(try http.send("GET", URL(string: base + "/warm")!, headers: []).status == 200)
        #expect(http.counts.opened == 1)
        do {
            _ = try http.send("POST", URL(string: base + "/grant")!, headers: [], body: Array("grant_type=refresh_token".utf8), once: true)
            Issue.record("the exchange succeeded")
        } catch {
            guard case .unanswered = error else { Issue.record("\(error) is not unanswered"); return }
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(server.onKept.withLock { $0 } == 1, "the grant rode the kept connection")
        #expect(server.copies.withLock { $0 } == 1, "the grant reached the server \(server.copies.withLock { $0 }) times")
    }

    @Test("without once, libcurl does send a request again when its kept connection is closed under it (what the guard is for)")
    func resentWithoutOnce() throws {
        let server = try FaultyServer(.close)
        let http = BlockingHTTP(timeout: 1)
        let base = "http://127.0.0.1:\(server.port)"
        #expect(try http.send("GET", URL(string: base + "/warm")!, headers: []).status == 200)
        _ = try? http.send("POST", URL(string: base + "/grant")!, headers: [], body: Array("x=1".utf8))
        Thread.sleep(forTimeInterval: 0.3)
        #expect(server.copies.withLock { $0 } == 2)
    }
}
