import Broker
import BrokerHTTP
import Foundation
import Synchronization

/// Health and metrics (spec §4.4): no authentication, no tenant data.
struct HealthRoutes {
    let runtime: BrokerRuntime

    func register(_ r: inout Router) {
        r.add("GET", "/healthz") { _ in .now(.json(200, "{\"status\":\"ok\"}")) }
        r.add("GET", "/readyz") { req in
            runtime.later(req) {
                do {
                    let pending = try runtime.pendingMigrations()
                    guard pending.isEmpty else {
                        return .json(503, "{\"status\":\"unready\",\"reason\":\"migrations pending\"}")
                    }
                    guard runtime.engine.loaded.load(ordering: .acquiring) else {
                        return .json(503, "{\"status\":\"unready\",\"reason\":\"refresh engine loading\"}")
                    }
                    return .json(200, "{\"status\":\"ready\"}")
                } catch {
                    return .json(503, "{\"status\":\"unready\",\"reason\":\"database unreachable\"}")
                }
            }
        }
        r.add("GET", "/metrics") { _ in
            .now(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")], body: Array(Metrics.render(runtime).utf8)))
        }
    }
}
