import BrokerCore
import Foundation
import Synchronization

/// ConnectionDeadlines closes connections whose client is too slow: the request line and headers
/// must arrive within `headers` seconds of the connection opening (or of the previous answer on
/// a kept-alive connection, then within the idle timeout), and the body within `body` seconds of
/// the headers. MHD's own timeout counts only inactivity, so a client trickling a byte every few
/// seconds would otherwise hold its slot for ever.
///
/// A connection past its deadline is `shutdown(2)`, under the lock its close notice also takes:
/// MHD then sees the socket end and closes it itself, and the descriptor cannot have been reused.
final class ConnectionDeadlines: @unchecked Sendable {
    /// One connection: its socket and its deadline (uptime nanoseconds; 0: none, a request is
    /// being answered).
    final class Watch: @unchecked Sendable {
        let fd: Int32
        let deadline = Atomic<UInt64>(0)
        /// The connection's client certificate as checked on its first request (mTLS): the
        /// verdict of `tb_mhd_client_certificate`, the fingerprint and the subject DN. Touched
        /// only on the connection's own MHD thread.
        var clientCertificate: (verdict: Int32, sha256: String?, subject: String?)?
        /// Its TLS handshake has been counted (full or resumed). Touched only on the
        /// connection's own MHD thread.
        var handshakeCounted = false
        /// The daemon the connection belongs to (a reload runs two for a while).
        let daemon: DaemonState?
        init(fd: Int32, daemon: DaemonState?) {
            self.fd = fd
            self.daemon = daemon
        }
    }

    let headers: UInt64, body: UInt64, idle: UInt64
    /// Taken by every HTTP thread as its connections open and close: a PlainMutex, since under
    /// Swift's Mutex (a priority-inheritance futex) these convoyed with more HTTP threads than
    /// cores (PlainMutex; with a new connection per request, 8 threads on 2 cores spent 16% of
    /// the broker's CPU in `Mutex._lockSlow` here).
    private let watched = PlainMutex<[ObjectIdentifier: Watch]>([:])
    private let stopped = Atomic<Bool>(false)
    /// Connections closed for being slow.
    let closed = Atomic<Int>(0)
    /// Connections opened since the start.
    let opened = Atomic<Int>(0)

    init(headers: TimeInterval, body: TimeInterval, idle: TimeInterval) {
        self.headers = UInt64(headers * 1e9)
        self.body = UInt64(body * 1e9)
        self.idle = UInt64(idle * 1e9)
    }

    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A connection opened.
    func opened(fd: Int32, daemon: DaemonState?) -> Watch {
        let w = Watch(fd: fd, daemon: daemon)
        opened.add(1, ordering: .relaxed)
        w.deadline.store(Self.now + headers, ordering: .relaxed)
        watched.withLock { $0[ObjectIdentifier(w)] = w }
        return w
    }

    func closed(_ w: Watch) { _ = watched.withLock { $0.removeValue(forKey: ObjectIdentifier(w)) } }

    /// Starts the sweep, four times a second.
    func start() {
        let t = Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                Thread.sleep(forTimeInterval: 0.25)
                sweep(now: Self.now)
            }
        }
        t.name = "http-deadlines"
        t.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    func sweep(now: UInt64) {
        watched.withLock { all in
            for w in all.values {
                let d = w.deadline.load(ordering: .relaxed)
                if d != 0 && d < now {
                    w.deadline.store(0, ordering: .relaxed)
                    shutdown(w.fd, Int32(SHUT_RDWR))
                    closed.add(1, ordering: .relaxed)
                }
            }
        }
    }
}
