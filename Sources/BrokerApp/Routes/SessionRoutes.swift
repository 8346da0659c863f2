import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// Session administration (spec §4.3): import a grant, read a session's metadata.
struct SessionRoutes {
    let runtime: BrokerRuntime

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/sessions:import", importSession)
        r.add("GET", "/v1/tenants/{t}/sessions/{id}") { req in
            let tenant = req[param: "t"]
            return runtime.guarded(req, .admin, tenant: tenant) { _ in
                runtime.later(req) {
                    _ = try runtime.registry.activeTenant(tenant, now: runtime.clock.now())
                    return .json(200, Render.session(try runtime.admin.session(tenant: tenant, id: req[param: "id"])))
                }
            }
        }
    }

    private func importSession(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return runtime.guarded(req, .admin, tenant: tenant) { principal in
            let b = try JSONObject.parse(req.body)
            func time(_ name: String) throws -> Date? {
                guard let s = try b.string(name) else { return nil }
                guard let d = RFC3339.parse(s) else { throw BrokerError.badRequest(code: "invalid_request", message: "'\(name)' must be an RFC 3339 time") }
                return d
            }
            let i = SessionAdmin.Import(client: try b.requiredString("client"), subject: try b.requiredString("subject"),
                                        refreshToken: try b.requiredString("refresh_token"), accessToken: try b.string("access_token"),
                                        expiresAt: try time("expires_at"), scopes: try b.string("scope").map { Scopes.parse($0) },
                                        grantedAt: try time("granted_at"))
            return .later { [runtime] respond in
                runtime.executorSubmit {
                    do {
                        _ = try runtime.registry.activeTenant(tenant, now: runtime.clock.now())
                        let s = try runtime.admin.importSession(i, tenant: tenant, actor: principal.id)
                        guard s.accessToken == nil else { return respond(.json(201, Render.session(s))) }
                        // No usable access token came with the grant: refresh at once (spec §4.3).
                        runtime.tokens.token(by: principal, tenant: tenant, target: .session(s.id), request: TokenRequest(minTTL: 0)) { _ in
                            let now = (try? runtime.admin.session(tenant: tenant, id: s.id)) ?? s
                            respond(.json(201, Render.session(now)))
                        }
                    } catch {
                        respond(ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID))
                    }
                }
            }
        }
    }
}

extension BrokerRuntime {
    func executorSubmit(_ work: @escaping @Sendable () -> Void) { executor.submit(work) }
}
