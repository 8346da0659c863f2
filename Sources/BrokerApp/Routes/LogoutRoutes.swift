import Broker
import BrokerCore
import BrokerHTTP
import Foundation

/// OpenID Connect Back-Channel Logout receiver: the IdP POSTs a logout token; no API
/// key — the token's signature by the client's issuer is the credential.
struct LogoutRoutes {
    let gate: Guard
    let backchannel: BackchannelLogoutService

    func register(_ r: inout Router) {
        r.add("POST", "/v1/backchannel-logout/{t}/{c}", logout)
    }

    private func logout(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"], client = req[param: "c"]
        // §2.5: application/x-www-form-urlencoded with one logout_token.
        guard let pairs = FormEncoding.pairs(req.body), pairs.count == 1, pairs[0].0 == "logout_token", !pairs[0].1.isEmpty else {
            return .now(ErrorResponse.response(.badRequest(code: "invalid_request", message: "the body must be one logout_token form parameter"),
                                               requestID: req.requestID))
        }
        let token = pairs[0].1
        return gate.later(req) {
            _ = try backchannel.logout(tenant: tenant, client: client, logoutToken: token)
            return HTTPResponse(status: 200, headers: [("Cache-Control", "no-store")])   // §2.8
        }
    }
}
