import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// Revocation (RFC 7009: a refresh token revokes its grant, an access token itself), userinfo (OIDC Core §5.3) and RP-initiated logout (OIDC RP-Initiated
/// Logout 1.0 §2).
extension DevIdP {
    func revoke(_ req: HTTPRequest) -> HTTPReply {
        guard state.withLock({ $0.settings.revocation }) else { return .now(json(404, ["error": "not_found"])) }
        let form = FormEncoding.decode(req.body)
        guard let clientID = authenticate(req, form) else { return .now(json(401, ["error": "invalid_client"])) }
        let process: @Sendable () -> HTTPResponse = { [self] in withClientNonce(revoked(form["token"], clientID: clientID), clientID) }
        if let f = state.withLock({ $0.takeFailure("revoke") }) { return reply(under: f, process) }
        return .now(process())
    }

    private func revoked(_ token: String?, clientID: String) -> HTTPResponse {
        if let t = token {
            // An access token is known by its jti and proven by its digest (IssuedAccessToken).
            let jti = (try? CompactJWS.parse(t))?.claims["jti"] as? String
            let digest = jti.map { _ in DevIdPCrypto.sha256(t) }
            state.withLock { s in
                s.stats[clientID, default: .init()].revocations += 1
                if let rt = s.refreshTokens[t], rt.client == clientID { s.families[rt.family]?.revoked = true }
                if let jti, let at = s.accessTokens[jti], at.digest == digest, at.client == clientID { s.accessTokens[jti]?.revoked = true }
            }
        }
        return HTTPResponse(status: 200)
    }

    /// The claims of the user an access token (ours, unexpired) was issued for.
    func userinfo(_ req: HTTPRequest) -> HTTPResponse {
        guard let h = req.header("authorization"), h.hasPrefix("Bearer "), let jws = try? CompactJWS.parse(String(h.dropFirst(7))),
              jws.type == "at+jwt" else {
            return json(401, ["error": "invalid_token"], ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
        }
        let keys = state.withLock { $0.keys.published }
        let verifier = OpenSSLSignatureVerifier()
        guard keys.contains(where: { $0.kid == jws.kid && verifier.verify(.es256, key: $0, input: jws.signingInput, signature: jws.signature) }),
              let exp = (jws.claims["exp"] as? NSNumber)?.doubleValue, exp > Date().timeIntervalSince1970,
              let sub = jws.claims["sub"] as? String, let client = jws.claims["client_id"] as? String else {
            return json(401, ["error": "invalid_token"], ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
        }
        state.withLock { $0.stats[client, default: .init()].userinfo += 1 }
        return withClientNonce(json(200, ["sub": sub, "email": sub + "@example.test", "email_verified": true]), client)
    }

    /// Ends the IdP-side session named by `id_token_hint` (which does not revoke refresh
    /// tokens, as at XID), then redirects to `post_logout_redirect_uri` when registered.
    func endSession(_ req: HTTPRequest) -> HTTPResponse {
        // An unreadable hint names no client: the client_id parameter, if any, does.
        let hint = req.queryValue("id_token_hint").flatMap { try? CompactJWS.parse($0) }
        let client = (hint?.claims["aud"] as? String) ?? req.queryValue("client_id") ?? ""
        state.withLock { $0.stats[client, default: .init()].endSessions += 1 }
        if let to = req.queryValue("post_logout_redirect_uri"), state.withLock({ $0.clients[client]?.redirectURIs.contains(to) == true }) {
            return .redirect(to + (req.queryValue("state").map { "?state=" + FormEncoding.encode($0) } ?? ""))
        }
        return json(200, ["logged_out": true])
    }
}
