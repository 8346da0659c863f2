import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// App tokens (role worker): a client's own token from the client-credentials grant.
struct AppTokenRoutes {
    let gate: Guard
    let appTokens: AppTokenService

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/clients/{c}/token", token)
    }

    /// `{"scope"?, "audience"?, "resource"?, "min_ttl"?, "dpop"?}`: checked before anything is
    /// asked or stored; `dpop` as on the session token route.
    static func ask(_ bytes: [UInt8]) throws -> (AppTokenAsk, TimeInterval?, [DPoPTarget]) {
        func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }
        let json = try bytes.isEmpty ? JSONObject.parse(Array("{}".utf8)) : JSONObject.parse(bytes)
        let minTTL = try json.int("min_ttl")
        if let m = minTTL, !(0...86_400).contains(m) { throw bad("'min_ttl' must be 0...86400 seconds") }
        let audience = try json.string("audience"), resource = try json.string("resource")
        if let a = audience, !(1...512).contains(a.utf8.count) { throw bad("'audience' must be 1...512 bytes") }
        if let r = resource {
            // RFC 8707 §2: an absolute URI without a fragment.
            guard r.utf8.count <= 2048, let u = URLComponents(string: r), u.scheme != nil, u.host?.isEmpty == false, u.fragment == nil else {
                throw bad("'resource' must be an absolute URI without a fragment")
            }
        }
        let scopes = Scopes.parse(try json.string("scope"))
        guard scopes.count <= 50, scopes.allSatisfy({ $0.utf8.count <= 100 }) else { throw bad("'scope' must be at most 50 scope tokens") }
        return (AppTokenAsk(scopes: scopes, audience: audience, resource: resource), minTTL.map(Double.init), try TokenRoutes.Body.dpop(json))
    }

    private func token(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"], client = req[param: "c"]
        return gate.guarded(req, .worker, tenant: tenant) { [appTokens] principal in
            let (ask, minTTL, dpop) = try Self.ask(req.body)
            return gate.later(req) {
                let t = try appTokens.token(tenant: tenant, client: client, ask: ask, minTTL: minTTL, dpop: dpop, actor: principal.id)
                return HTTPResponse.json(200, Render.appToken(t)).uncacheable()
            }
        }
    }
}
