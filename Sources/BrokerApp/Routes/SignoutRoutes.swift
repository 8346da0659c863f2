import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// Bulk sign-out jobs, for admins and the `tokenbroker signout` cron command.
struct SignoutRoutes {
    let gate: Guard
    let signouts: SignoutService

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/signouts", create)
        r.add("GET", "/v1/tenants/{t}/signouts/{id}", show)
    }

    private func create(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .admin, tenant: tenant) { p in
            let b = try JSONObject.parse(req.body)
            func time(_ name: String) throws -> Date? {
                guard let s = try b.string(name) else { return nil }
                guard let d = RFC3339.parse(s) else { throw BrokerError.badRequest(code: "invalid_request", message: "'\(name)' must be an RFC 3339 time") }
                return d
            }
            let filter = SignoutJob.Filter(subject: try b.string("subject"), client: try b.string("client"), createdBefore: try time("created_before"),
                                           idleSince: try time("idle_since"), all: try b.bool("all") ?? false, endUser: try b.string("end_user"))
            let dryRun = try b.bool("dry_run") ?? false
            let key = req.header("idempotency-key")
            return gate.later(req) {
                let (job, _) = try signouts.create(tenant: tenant, filter: filter, dryRun: dryRun, idempotencyKey: key, actor: p.id)
                var r = HTTPResponse.json(202, Render.signout(job))
                r.headers.append(("Location", "/v1/tenants/\(tenant)/signouts/\(job.id)"))
                return r
            }
        }
    }

    private func show(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .admin, tenant: tenant) { _ in
            gate.later(req) {
                guard let job = try signouts.job(tenant: tenant, id: req[param: "id"]) else { throw BrokerError.notFound("sign-out job") }
                return .json(200, Render.signout(job))
            }
        }
    }
}
