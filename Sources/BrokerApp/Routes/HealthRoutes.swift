import Broker
import BrokerHTTP
import Foundation
import Synchronization

/// Health and metrics: no authentication, no tenant data.
struct HealthRoutes {
    let gate: Guard
    /// Migrations not applied yet (none: the schema is current).
    let pendingMigrations: @Sendable () throws -> [Int]
    let engine: RefreshEngine
    /// Whether the change feed delivers (its canaries come back).
    let feedAlive: @Sendable () -> Bool
    /// The Prometheus text of every metric.
    let metrics: @Sendable () -> String

    func register(_ r: inout Router) {
        r.add("GET", "/healthz") { _ in .now(.json(200, "{\"status\":\"ok\"}")) }
        r.add("GET", "/readyz") { req in
            gate.later(req) {
                do {
                    let pending = try pendingMigrations()
                    guard pending.isEmpty else {
                        return .json(503, "{\"status\":\"unready\",\"reason\":\"migrations pending\"}")
                    }
                    guard engine.loaded.load(ordering: .acquiring) else {
                        return .json(503, "{\"status\":\"unready\",\"reason\":\"refresh engine loading\"}")
                    }
                    guard feedAlive() else {
                        return .json(503, "{\"status\":\"unready\",\"reason\":\"change feed not delivering\"}")
                    }
                    return .json(200, "{\"status\":\"ready\"}")
                } catch {
                    return .json(503, "{\"status\":\"unready\",\"reason\":\"database unreachable\"}")
                }
            }
        }
        r.add("GET", "/metrics") { _ in
            .now(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")], body: Array(metrics().utf8)))
        }
    }
}
