import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// Session administration: import a grant, read a session's metadata.
struct SessionRoutes {
    let gate: Guard
    let admin: SessionAdmin

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/sessions:import", importSession)
        r.add("GET", "/v1/tenants/{t}/sessions/{id}") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .admin, tenant: tenant) { _ in
                gate.later(req) { .json(200, Render.session(try admin.session(tenant: tenant, id: req[param: "id"]))) }
            }
        }
    }

    /// An import's `metadata`: a JSON object, kept as compact text.
    static func metadata(_ b: JSONObject, body: [UInt8]) throws -> String? {
        guard try b.object("metadata") != nil,
              let m = ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["metadata"] as? [String: Any], !m.isEmpty else { return nil }
        return ProviderDescriptor.canonical(m)
    }

    private func importSession(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .admin, tenant: tenant) { principal in
            let b = try JSONObject.parse(req.body)
            func time(_ name: String) throws -> Date? {
                guard let s = try b.string(name) else { return nil }
                guard let d = RFC3339.parse(s) else { throw BrokerError.badRequest(code: "invalid_request", message: "'\(name)' must be an RFC 3339 time") }
                return d
            }
            let i = SessionAdmin.Import(client: try b.requiredString("client"), subject: try b.requiredString("subject"),
                                        refreshToken: try b.string("refresh_token"), accessToken: try b.string("access_token"),
                                        expiresAt: try time("expires_at"), scopes: try b.string("scope").map { Scopes.parse($0) },
                                        grantedAt: try time("granted_at"), metadata: try Self.metadata(b, body: req.body),
                                        endUser: try b.string("end_user"))
            return .later { [admin, executor = gate.executor] respond in
                CurrentTrace.with(req.trace) { executor.run {
                    admin.importSession(i, tenant: tenant, by: principal) { result in
                        switch result {
                        case .success(let s): respond(.json(201, Render.session(s)))
                        case .failure(let e): respond(ErrorResponse.response(e, requestID: req.requestID))
                        }
                    }
                } }
            }
        }
    }
}
