import BrokerCore
import BrokerHTTP
import Foundation

/// ListenerService is one HTTP listener as a service: its start binds and serves (and logs the
/// address), its stop drains it (MHDServer.stop: what is in flight is answered, late arrivals
/// get 503) within the listener's grace and the patience of the refreshes it waits for.
final class ListenerService: Service {
    /// How long a stopping listener waits for suspended requests before answering 503.
    static let grace: TimeInterval = 10
    let listener: Listener
    let server: MHDServer
    private let logger: Logger

    init(listener: Listener, server: MHDServer, logger: Logger) {
        (self.listener, self.server, self.logger) = (listener, server, logger)
    }

    var name: String { "listener \(listener.address)" }

    func start() throws {
        try server.start()
        let http = listener.http
        logger.info("listening", ("address", "\(http.host):\(server.port)"), ("audiences", listener.audiences.map(\.rawValue).sorted().joined(separator: ",")),
                    ("tls", http.tls == nil ? "off" : http.tls?.clientCAFile == nil ? "on" : "mtls"), ("pid", String(getpid())))
    }

    func stop(deadline: Date) { server.stop(grace: Self.grace) }
}
