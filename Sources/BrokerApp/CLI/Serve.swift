import Broker
import BrokerCore
import BrokerHTTP
import Foundation
import Synchronization

/// Serve runs the HTTP API until SIGTERM or SIGINT, then shuts down gracefully: answer what is
/// in flight (telling clients to go, then 503 to late arrivals), finish queued refreshes (their
/// transactions commit or roll back, releasing their locks), flush audit and usage. A second
/// signal during that exits at once (status 1), as a SIGKILL would: what is in flight is then
/// left to the refresh machine's recovery, which is built for a replica that dies mid-call.
enum Serve {
    static func run(_ rt: BrokerRuntime) throws -> Int32 {
        let log = rt.logger
        _ = ProcessStats.started   // process_start_time_seconds counts from here
        do { try rt.pool.check() } catch {
            return CLI.fail("\(error)", 1)
        }
        let pending = try rt.pendingMigrations()
        guard pending.isEmpty else {
            return CLI.fail("the database is not migrated (pending: \(pending.map(String.init).joined(separator: ", "))): run `tokenbroker migrate` first", 2)
        }
        let router = Routes.router(rt)
        let listeners = rt.config.listeners.map { l in
            let dispatcher = Dispatcher(router: router, logger: log, accessLog: rt.config.accessLog, maxBodyBytes: l.http.maxBodyBytes,
                                        audiences: l.audiences, metrics: rt.requests)
            return ListenerService(listener: l, server: MHDServer(config: l.http, streams: router) { dispatcher.handle($0) }, logger: log)
        }
        // A port in use (another instance) or an unreadable certificate is a start-up error,
        // before the engine starts.
        for s in listeners {
            do { try s.server.probe() } catch {
                let hint = (error as? MHDServer.StartError)?.addressInUse == true ? "; set \(s.listener.variable) to another host:port" : ""
                return CLI.fail("\(s.listener.variable): \(error)\(hint)", 2)
            }
        }
        let services = rt.services(listeners: listeners)
        do { try services.start() } catch {
            return CLI.fail("\(error)", 2)
        }

        let stopping = Atomic<Bool>(false)
        let stop: @Sendable (Int32) -> Void = { sig in
            // The handlers run on a concurrent queue: a second signal must not run the shutdown
            // again beside the first (every service stopped twice at once).
            guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
                log.warn("second signal during shutdown: exiting now", ("signal", String(sig)))
                _exit(1)
            }
            log.info("shutting down", ("signal", String(sig)))
            // The listeners drain together, then the rest stops in reverse of its start, all by
            // one deadline; then the buffers are written.
            services.stop(deadline: Date().addingTimeInterval(rt.shutdownBudget))
            rt.flush()
            log.info("stopped")
            // _exit, not exit: exit() runs every library's destructors (OpenSSL's cleanup,
            // GnuTLS's ASN.1 trees, libmicrohttpd's) while threads that may still be inside
            // those libraries run on; a crash in GnuTLS's destructor was seen that way. Our own
            // shutdown above is the whole of what must happen, and the logs are unbuffered.
            _exit(0)
        }
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { stop(sig) }
            source.resume()
            Signals.keep(source)
        }
        // SIGHUP: every TLS listener reads its certificate and key files again; connections
        // already open finish on the old ones.
        signal(SIGHUP, SIG_IGN)
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hup.setEventHandler {
            for s in listeners where s.listener.http.tls != nil {
                do {
                    try s.server.reload()
                    log.info("certificates reloaded", ("address", s.listener.address))
                } catch {
                    log.error("certificate reload failed; the old ones stay in use", ("address", s.listener.address), ("error", "\(error)"))
                }
            }
        }
        hup.resume()
        Signals.keep(hup)
        dispatchMain()
    }
}

/// Signals keeps signal sources alive for the life of the process.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    static func keep(_ s: any DispatchSourceSignal) { sources.append(s) }
}
