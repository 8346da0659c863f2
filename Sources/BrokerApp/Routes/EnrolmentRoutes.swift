import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// Enrolment: start a login (role `enrol`), and the OAuth callback the IdP sends
/// the user's browser back to (no API key: the state is its credential).
struct EnrolmentRoutes {
    let gate: Guard
    let logins: LoginService

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/logins", start)
        r.add("GET", "/v1/callback", callback)
    }

    private func start(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .enrol, tenant: tenant) { p in
            let b = try JSONObject.parse(req.body)
            let r = LoginService.Request(client: try b.requiredString("client"), redirectAfter: try b.string("redirect_after"),
                                         loginHint: try b.string("login_hint"), scopes: try b.string("scope").map { Scopes.parse($0) },
                                         endUser: try b.string("end_user"))
            return gate.later(req) {
                let s = try logins.start(r, tenant: tenant, actor: p.id)
                return .json(201, JSONText.object([("login_id", JSONText.quote(s.id)), ("authorization_url", JSONText.quote(s.authorizationURL)),
                                                   ("expires_at", RFC3339.optional(s.expiresAt))]))
            }
        }
    }

    private func callback(_ req: HTTPRequest) -> HTTPReply {
        // RFC 6749 §3.1: a parameter sent twice makes the request invalid.
        for name in ["state", "code", "iss", "error"] where req.query.filter({ $0.name == name }).count > 1 {
            return .now(ErrorResponse.response(.badRequest(code: "invalid_request", message: "'\(name)' appears more than once"), requestID: req.requestID))
        }
        let cb = LoginService.Callback(state: req.queryValue("state"), code: req.queryValue("code"), iss: req.queryValue("iss"),
                                       error: req.queryValue("error"))
        return gate.later(req) {
            var r: HTTPResponse
            switch try logins.complete(cb) {
            case .signedIn(let s, let after?):
                r = .redirect(Self.adding(("session_id", s.id), to: after))
            case .signedIn(let s, nil):
                r = .json(200, Render.session(s))
            case .refused(let error, let after?):
                r = .redirect(Self.adding(("error", error), to: after))
            case .refused(let error, nil):
                r = ErrorResponse.response(.badRequest(code: error, message: "the identity provider answered \(error); no session was created"),
                                           requestID: req.requestID)
            }
            r.headers.append(("Cache-Control", "no-store"))
            return r
        }
    }

    /// `url` with one more query parameter (the values here are ids and error codes: URL-safe).
    static func adding(_ p: (String, String), to url: String) -> String {
        url + (url.contains("?") ? "&" : "?") + p.0 + "=" + p.1
    }
}
