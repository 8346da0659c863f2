import Broker
import BrokerCore
import BrokerHTTP
import Foundation

/// Serve runs the HTTP API until SIGTERM or SIGINT, then shuts down gracefully: stop accepting,
/// answer what is in flight, finish queued refreshes (their transactions commit or roll back,
/// releasing their locks), flush audit and usage.
enum Serve {
    static func run(_ rt: BrokerRuntime) throws -> Int32 {
        let log = rt.logger
        do { try rt.pool.check() } catch {
            return CLI.fail("\(error)", 1)
        }
        let pending = try rt.pendingMigrations()
        guard pending.isEmpty else {
            return CLI.fail("the database is not migrated (pending: \(pending.map(String.init).joined(separator: ", "))): run `tokenbroker migrate` first", 2)
        }
        let dispatcher = Dispatcher(router: Routes.router(rt), logger: log, accessLog: rt.config.accessLog,
                                    maxBodyBytes: rt.config.http.maxBodyBytes)
        let server = MHDServer(config: rt.config.http) { dispatcher.handle($0) }
        // A port in use (another instance) is a start-up error, before the engine starts.
        do { try server.probe() } catch {
            return CLI.fail("\(error)", 2)
        }
        rt.startBackground()
        do { try server.start() } catch {
            return CLI.fail("\(error)", 2)
        }
        log.info("listening", ("address", "\(rt.config.http.host):\(server.port)"), ("pid", String(getpid())))

        let stop: @Sendable (Int32) -> Void = { sig in
            log.info("shutting down", ("signal", String(sig)))
            server.stop()
            rt.shutdown()
            log.info("stopped")
            exit(0)
        }
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { stop(sig) }
            source.resume()
            Signals.keep(source)
        }
        dispatchMain()
    }
}

/// Signals keeps signal sources alive for the life of the process.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    static func keep(_ s: any DispatchSourceSignal) { sources.append(s) }
}
