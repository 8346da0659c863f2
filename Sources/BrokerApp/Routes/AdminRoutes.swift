import Broker
import BrokerCore
import BrokerHTTP
import Foundation

/// Session administration beyond import: the listing, revocation, the audit trail.
struct AdminRoutes {
    let gate: Guard
    let admin: SessionAdmin

    func register(_ r: inout Router) {
        r.add("GET", "/v1/tenants/{t}/sessions", list)
        r.add("DELETE", "/v1/tenants/{t}/sessions/{id}", revoke)
        r.add("GET", "/v1/tenants/{t}/audit", audit)
    }

    private func list(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .admin, tenant: tenant) { _ in
            let q = try QueryParameters(req, allowed: ["subject", "end_user", "client", "state", "created_before", "created_after", "idle_since", "limit", "cursor"])
            var query = SessionQuery(subject: try q.string("subject"), client: try q.string("client"), createdBefore: try q.time("created_before"),
                                     createdAfter: try q.time("created_after"), idleSince: try q.time("idle_since"), limit: try q.limit(),
                                     endUser: try q.string("end_user"))
            if let s = try q.string("state") {
                guard let state = SessionState(rawValue: s) else { throw QueryParameters.bad("'state' must be active, needs_reauth or revoked") }
                query.state = state
            }
            if let c = try q.string("cursor") {
                guard let cursor = SessionQuery.Cursor(text: c) else { throw QueryParameters.bad("'cursor' is not a cursor of this listing") }
                query.after = cursor
            }
            let filter = query
            return gate.later(req) {
                let (page, next) = try admin.sessions(tenant: tenant, matching: filter)
                return .json(200, JSONText.object([("sessions", JSONText.array(page.map { Render.session($0) })),
                                                   ("next_cursor", JSONText.optional(next?.text))]))
            }
        }
    }

    private func revoke(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"], id = req[param: "id"]
        return gate.guarded(req, .admin, tenant: tenant) { p in
            let q = try QueryParameters(req, allowed: ["end_session", "post_logout_redirect_uri"])
            let endSession = try q.bool("end_session"), redirect = try q.string("post_logout_redirect_uri")
            return gate.later(req) {
                let o = try admin.revoke(tenant: tenant, id: id, actor: p.id, endSession: endSession, postLogoutRedirect: redirect)
                return .json(200, Render.revocation(o))
            }
        }
    }

    private func audit(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .admin, tenant: tenant) { _ in
            let q = try QueryParameters(req, allowed: ["action", "session", "actor", "client", "since", "until", "limit", "cursor"])
            let action = try q.string("action").map { name -> AuditAction in
                guard let a = AuditAction(rawValue: name) else {
                    throw QueryParameters.bad("'action' must be one of: \(AuditAction.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return a
            }
            var query = AuditQuery(action: action, session: try q.string("session"), actor: try q.string("actor"),
                                   since: try q.time("since"), until: try q.time("until"), limit: try q.limit(), client: try q.string("client"))
            if let c = try q.string("cursor") {
                guard let before = Int64(c), before > 0 else { throw QueryParameters.bad("'cursor' is not a cursor of this listing") }
                query.before = before
            }
            let filter = query
            return gate.later(req) {
                let (records, next) = try admin.events(tenant: tenant, matching: filter)
                return .json(200, JSONText.object([("events", JSONText.array(records.map(Render.audit))),
                                                   ("next_cursor", JSONText.optional(next.map(String.init)))]))
            }
        }
    }
}
