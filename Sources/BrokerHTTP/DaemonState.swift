import Synchronization

/// DaemonState is one libmicrohttpd daemon's requests in flight and how far it is in closing:
/// a daemon may only be stopped with none suspended (MHD panics, and a later resume would touch
/// freed memory), so a closing daemon first tells clients to go (`draining`: answers carry
/// `Connection: close`), then answers new requests at once (`refusing`: never suspended), and is
/// stopped when its last suspended request has been answered.
///
/// It is the `cls` of every callback of its daemon: libmicrohttpd runs a thread pool as worker
/// daemons of their own, so a connection's daemon pointer names a worker, never the daemon
/// that was started — the callback's `cls` is what tells the daemons of a reload apart.
final class DaemonState: Sendable {
    unowned let server: MHDServer
    let suspended = Atomic<Int>(0)
    /// Connections handed to the daemon that it has not started serving yet (MHD counts them
    /// only once a worker takes them up). One MHD drops before starting it (out of memory) is
    /// never counted down: the old daemon of a reload then waits out its grace before it stops,
    /// which costs nothing but the wait.
    let adopting = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)
    let refusing = Atomic<Bool>(false)

    init(server: MHDServer) { self.server = server }
}
