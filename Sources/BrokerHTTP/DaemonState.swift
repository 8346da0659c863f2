import Synchronization

/// DaemonState is one libmicrohttpd daemon's requests in flight and how far it is in closing:
/// a daemon may only be stopped with none suspended (MHD panics, and a later resume would touch
/// freed memory), so a closing daemon first tells clients to go (`draining`: answers carry
/// `Connection: close`), then answers new requests at once (`refusing`: never suspended), and is
/// stopped when its last suspended request has been answered.
final class DaemonState: Sendable {
    let suspended = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)
    let refusing = Atomic<Bool>(false)
}
