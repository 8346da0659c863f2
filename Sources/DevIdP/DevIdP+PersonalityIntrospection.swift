import BrokerHTTP
import Foundation

/// HubSpot's token introspection (OAuth API 2026-03), which replaces v1's token metadata
/// (`GET /oauth/v1/access-tokens/{token}`): `POST /oauth/2026-03/token/introspect` with `token`,
/// `client_id` and `client_secret` in a form. An access or refresh token of the client is active,
/// with HubSpot's members (`hub_id`, `user_id`, `user`, `scopes`, `token_type`); any other is
/// `{"active": false}` (RFC 7662 §2.2).
extension DevIdP {
    func hubspotIntrospect(_ p: Personality, _ req: HTTPRequest) -> HTTPResponse {
        let fields = Self.fields(req)
        guard fields["client_secret"] != nil, let client = authenticate(req, fields) else {
            return refusal(p, req, code: "invalid_client", status: 401, description: "client authentication failed")
        }
        guard let token = fields["token"] else { return refusal(p, req, code: "invalid_request", description: "token missing") }
        func active(_ subject: String, _ scope: String, _ type: String) -> HTTPResponse {
            state.withLock { $0.stats[client, default: .init()].whoAmI += 1 }
            let email = subject.contains("@") ? subject : subject + "@example.test"
            return json(200, ["active": true, "client_id": client, "token_type": type, "user": email, "user_id": p.userID(subject),
                              "hub_id": Self.hubID, "hub_domain": "development.hubspot.test", "scopes": Personality.scopes(scope)])
        }
        if let a = personalityAccess(p, token), a.client == client { return active(a.subject, a.scope, "access") }
        let refresh = state.withLock { s -> DevIdPState.Refresh? in
            guard let rt = s.refreshTokens[token], rt.client == client, let f = s.families[rt.family], f.personality == p.name,
                  !f.revoked, f.current == token else { return nil }
            return rt
        }
        if let rt = refresh { return active(rt.subject, rt.scope, "refresh") }
        return json(200, ["active": false])
    }
}
