import BrokerHTTP
import Foundation

/// A personality's revocation endpoint, in the provider's own style (Personality.Revocation).
/// Revoking a refresh token revokes its grant, and with it every access token of the grant;
/// revoking an access token ends it (and its grant, where the provider says so: Dropbox,
/// GitHub). Each revocation received counts for the client, by style, in `/stats`.
extension DevIdP {
    func personalityRevoke(_ p: Personality, _ req: HTTPRequest) -> HTTPResponse {
        let fields = Self.fields(req)
        if let header = p.revocationVersionHeader, req.header(header.lowercased()) == nil {
            return json(400, ["object": "error", "status": 400, "code": "missing_version",
                              "message": "\(header) header failed validation: \(header) header should be defined, instead was `undefined`."])
        }
        switch p.revocation {
        case .rfc7009(_, let answer):
            // Credentials given must be right; none is a public client (Google's endpoint needs none).
            let given = req.header("authorization") != nil || fields["client_secret"] != nil
            let client = given ? authenticate(req, fields) : nil
            if given && client == nil { return json(401, ["error": "invalid_client"]) }
            guard let token = fields["token"] ?? req.queryValue("token") else { return json(400, ["error": "invalid_request"]) }
            revokePersonalityToken(p, token, client: client, endsGrant: false)
            return answer.map { .json(200, $0) } ?? HTTPResponse(status: 200)
        case .jsonBasic(_, let answer):
            guard req.header("authorization")?.hasPrefix("Basic ") == true, let client = authenticate(req, [:]) else {
                return json(401, ["error": "invalid_client"])
            }
            guard let token = fields["token"] else { return json(400, ["error": "invalid_request"]) }
            revokePersonalityToken(p, token, client: client, endsGrant: false)
            return answer.map { .json(200, $0) } ?? HTTPResponse(status: 200)
        case .github:
            guard req.header("authorization")?.hasPrefix("Basic ") == true, let client = authenticate(req, [:]),
                  client == req.parameters["client_id"] else { return json(401, ["message": "Requires authentication"]) }
            guard let token = fields["access_token"], revokePersonalityToken(p, token, client: client, endsGrant: true) else {
                return json(404, ["message": "Not Found"])
            }
            return HTTPResponse(status: 204)
        case .slack:
            let token = Self.bearer(req) ?? fields["token"] ?? req.queryValue("token")
            guard let access = personalityAccess(p, token) else { return json(200, ["ok": false, "error": "invalid_auth"]) }
            if ["1", "true"].contains(fields["test"] ?? req.queryValue("test")) { return json(200, ["ok": true, "revoked": false]) }
            revokePersonalityToken(p, token!, client: access.client, endsGrant: false)
            return json(200, ["ok": true, "revoked": true])
        case .dropbox:
            guard let access = personalityAccess(p, Self.bearer(req)) else { return Self.dropboxRefusal }
            revokePersonalityToken(p, Self.bearer(req)!, client: access.client, endsGrant: true)
            return .json(200, "null")
        case .hubspot:
            // The credentials beside the token in the form, as every 2026-03 endpoint takes them.
            guard fields["client_secret"] != nil, let client = authenticate(req, fields) else {
                return refusal(p, req, code: "invalid_client", status: 401, description: "client authentication failed")
            }
            guard let token = fields["token"], state.withLock({ $0.refreshTokens[token]?.client == client }),
                  revokePersonalityToken(p, token, client: client, endsGrant: false, refreshOnly: true) else {
                return refusal(p, req, code: "invalid_request", description: "token is not a refresh token of this client")
            }
            return HTTPResponse(status: 200)
        case .request(_, let endsGrant):
            guard fields["client_secret"] != nil, let client = authenticate(req, fields) else {
                return json(400, ["error": "invalid_client", "error_description": "The client credentials are not valid"])
            }
            guard let token = fields["token"] else { return json(400, ["error": "invalid_request"]) }
            _ = revokePersonalityToken(p, token, client: client, endsGrant: endsGrant)
            return HTTPResponse(status: 200)
        case .none:
            return json(404, ["error": "not_found"])
        }
    }

    /// Dropbox's answer to a bad bearer token.
    static let dropboxRefusal = HTTPResponse.json(401, #"{"error_summary": "invalid_access_token/..", "error": {".tag": "invalid_access_token"}}"#)

    /// Ends `token` (of `client`, when known) at `p`; counts the revocation for the token's
    /// client, by style and by the kind of token it named. True when the token was one of `p`'s. With `refreshOnly` a refresh token is
    /// forgotten and its grant's access tokens live on (HubSpot).
    @discardableResult
    private func revokePersonalityToken(_ p: Personality, _ token: String, client: String?, endsGrant: Bool, refreshOnly: Bool = false) -> Bool {
        state.withLock { s in
            var owner: String?, kind = "unknown"
            if let a = s.personalityAccess[token], a.personality == p.name, client == nil || a.client == client {
                s.personalityAccess[token] = nil
                if endsGrant, let f = a.family { s.families[f]?.revoked = true }
                (owner, kind) = (a.client, "access")
            } else if let rt = s.refreshTokens[token], s.families[rt.family]?.personality == p.name, client == nil || rt.client == client {
                if refreshOnly { s.refreshTokens[token] = nil } else { s.families[rt.family]?.revoked = true }
                (owner, kind) = (rt.client, "refresh")
            }
            guard let counted = owner ?? client else { return false }
            s.stats[counted, default: .init()].revocations += 1
            s.stats[counted, default: .init()].revocationStyles[p.revocation.style, default: 0] += 1
            s.stats[counted, default: .init()].revokedTokens[kind, default: 0] += 1
            return owner != nil
        }
    }
}
