import Foundation

/// RawSocket sends bytes exactly as given over one TCP connection — malformed framing
/// included — and reads what comes back until the server closes or a timeout passes.
final class RawSocket {
    let fd: Int32

    /// Connects to 127.0.0.1:`port`, from `source` (another loopback address stands for
    /// another client).
    init(port: UInt16, source: String = "127.0.0.1", timeout: Int = 3) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            a.sin_addr.s_addr = inet_addr(host)
            return a
        }
        var from = address(source, 0), to = address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard withUnsafePointer(to: &from, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }) == 0,
              withUnsafePointer(to: &to, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }) == 0
        else { close(fd); throw POSIXError(.ECONNREFUSED) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    func send(_ s: String) { send(Array(s.utf8)) }

    /// Everything received until the server closed (`closed`) or the timeout passed; the status
    /// of each response in it.
    func drain() -> (statuses: [Int], text: String, closed: Bool) {
        var data = [UInt8](), buf = [UInt8](repeating: 0, count: 65536), closed = false
        while true {
            let n = read(fd, &buf, buf.count)
            if n == 0 { closed = true; break }
            if n < 0 { closed = errno == ECONNRESET; break }
            data += buf[0..<n]
        }
        let text = String(decoding: data, as: UTF8.self)
        // A response may follow the previous body on the same line: find every status line.
        let statuses = text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
        return (statuses, text, closed)
    }

    /// True while the server keeps the connection open (nothing to read, no end).
    var isOpen: Bool {
        var buf = [UInt8](repeating: 0, count: 64)
        let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}
