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
        let servers = rt.config.listeners.map { l in
            let dispatcher = Dispatcher(router: router, logger: log, accessLog: rt.config.accessLog, maxBodyBytes: l.http.maxBodyBytes,
                                        audiences: l.audiences, metrics: rt.requests)
            return (l, MHDServer(config: l.http) { dispatcher.handle($0) })
        }
        // A port in use (another instance) or an unreadable certificate is a start-up error,
        // before the engine starts.
        do { for (_, s) in servers { try s.probe() } } catch {
            return CLI.fail("\(error)", 2)
        }
        rt.startBackground()
        for (l, s) in servers {
            do { try s.start() } catch {
                return CLI.fail("\(error)", 2)
            }
            log.info("listening", ("address", "\(l.http.host):\(s.port)"), ("audiences", l.audiences.map(\.rawValue).sorted().joined(separator: ",")),
                     ("tls", l.http.tls == nil ? "off" : l.http.tls?.clientCAFile == nil ? "on" : "mtls"), ("pid", String(getpid())))
        }

        let stopping = Atomic<Bool>(false)
        let stop: @Sendable (Int32) -> Void = { sig in
            // The handlers run on a concurrent queue: a second signal must not run the shutdown
            // again beside the first (rt.shutdown twice at once).
            guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
                log.warn("second signal during shutdown: exiting now", ("signal", String(sig)))
                _exit(1)
            }
            log.info("shutting down", ("signal", String(sig)))
            // Every listener drains at once, each on a thread of its own: one after another,
            // each waited out its own grace and its requests' refreshes while the next still
            // took new work (internal, public and ops: up to three times grace + patience).
            let drained = DispatchGroup()
            for (_, s) in servers {
                drained.enter()
                Thread.detachNewThread {
                    s.stop()
                    drained.leave()
                }
            }
            drained.wait()
            rt.shutdown()
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
            for (l, s) in servers where l.http.tls != nil {
                do {
                    try s.reload()
                    log.info("certificates reloaded", ("address", l.address))
                } catch {
                    log.error("certificate reload failed; the old ones stay in use", ("address", l.address), ("error", "\(error)"))
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
