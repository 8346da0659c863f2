import Foundation
import Synchronization

/// Acceptor owns a listener's socket and accepts its connections on a thread of its own,
/// handing each to the daemon serving now (`MHD_add_connection`). libmicrohttpd is started
/// without a listening socket, so a reload only changes where new connections go: it never takes
/// a socket away from a running daemon. `MHD_quiesce_daemon`, the one way to do that, races the
/// daemon's own epoll workers in 0.9.75 (both take the listening socket out of a worker's epoll
/// set, unguarded; the loser aborts the process, daemon.c:5531 and :4976).
///
/// No `SO_REUSEPORT`: a second instance on a port in use fails to bind instead of quietly taking
/// half of the first one's connections.
final class Acceptor: Sendable {
    struct BindError: Error { let code: Int32 }

    let fd: Int32
    /// The bound port (the chosen one when asked for 0).
    let port: UInt16
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    /// Binds and listens; nothing is accepted until `run`.
    init(address: sockaddr_in) throws(BindError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BindError(code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = address
        let bound = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, SOMAXCONN) == 0, fcntl(fd, F_SETFL, O_NONBLOCK) == 0 else {
            let code = errno
            close(fd)
            throw BindError(code: code)
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
    }

    /// Accepts until `stop`: each connection goes to `hand`, which owns it from then on. While
    /// `room` says no (the connection limit), new connections wait in the backlog, as they do
    /// when libmicrohttpd listens itself.
    func run(room: @escaping @Sendable () -> Bool, hand: @escaping @Sendable (Int32, sockaddr_in) -> Void) {
        running.store(true, ordering: .releasing)
        let t = Thread { [self] in
            defer { ended.signal() }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while !stopping.load(ordering: .acquiring) {
                guard room() else {
                    usleep(10_000)
                    continue
                }
                // Every connection waiting is taken before sleeping again: under a burst of new
                // connections the thread wakes once for many.
                var addr = sockaddr_in()
                var len = socklen_t(MemoryLayout<sockaddr_in>.size)
                // accept, not accept4 (not in Swift's Glibc): libmicrohttpd makes the socket
                // non-blocking and close-on-exec when it takes it (MHD_USE_TURBO).
                let c = withUnsafeMutablePointer(to: &addr) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(fd, $0, &len) }
                }
                if c >= 0 {
                    hand(c, addr)
                } else if errno == EAGAIN {
                    _ = poll(&ready, 1, -1)   // `stop` wakes it (shutdown: POLLHUP)
                } else if errno != EINTR && errno != ECONNABORTED && !stopping.load(ordering: .acquiring) {
                    usleep(10_000)   // out of descriptors or buffers (EMFILE, ENFILE, ENOBUFS): shortly again
                }
            }
        }
        t.name = "accept:\(port)"
        t.start()
    }

    /// Stops accepting and closes the socket; once it returns, `hand` is not called again.
    /// Connections still in the backlog are reset.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(fd, Int32(SHUT_RDWR))   // wakes the poll (POLLHUP on Linux)
        if running.load(ordering: .acquiring) { ended.wait() }
        close(fd)
    }
}
