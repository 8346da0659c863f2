import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// Token introspection (RFC 7662), with the token endpoint's client authentication (§2.1). A
/// token of another client is reported inactive (§4 lets a server do so). `token_type_hint` is
/// accepted and not needed: a refresh token (random) and an access token (a JWS with a `jti`)
/// cannot be mistaken for each other, and §2.1 lets the server search all types.
///
/// A refresh token is active iff it is known, the client's, its family not revoked, and it is
/// the family's current (not yet rotated) token. An access token is active iff this IdP issued
/// exactly that string, it is the client's, and it has not died (`DevIdPState.death(of:at:)`).
extension DevIdP {
    func introspect(_ req: HTTPRequest) -> HTTPResponse {
        guard state.withLock({ $0.settings.introspection }) else { return json(404, ["error": "not_found"]) }
        let form = FormEncoding.decode(req.body)
        guard let clientID = authenticate(req, form) else {
            return json(401, ["error": "invalid_client"], ["WWW-Authenticate": "Basic"])
        }
        guard let token = form["token"] else { return json(400, ["error": "invalid_request"]) }
        // Not a JWT: no jti, so no token of ours — answered inactive.
        let jti = (try? CompactJWS.parse(token))?.claims["jti"] as? String
        let digest = jti.map { _ in DevIdPCrypto.sha256(token) }
        let now = Date()
        let body = state.withLock { s -> [String: Any] in
            s.stats[clientID, default: .init()].introspections += 1
            if let rt = s.refreshTokens[token], rt.client == clientID, let f = s.families[rt.family], !f.revoked, f.current == token {
                return ["active": true, "client_id": clientID, "sub": rt.subject, "scope": rt.scope]
            }
            if let jti, let at = s.accessTokens[jti], at.digest == digest, at.client == clientID, s.death(of: at, at: now) == nil {
                return ["active": true, "client_id": clientID, "sub": at.subject, "scope": at.scope,
                        "exp": Int(at.expires.timeIntervalSince1970), "token_type": "Bearer"]
            }
            // Not in RFC 7662 (§2.2 allows extensions): when a rotation killed this access
            // token, so that a test can tell a token dead when handed out from one that died after.
            if let jti, let at = s.accessTokens[jti], at.digest == digest, let f = at.family,
               let killed = s.families[f]?.killedAt(at.number) {
                return ["active": false, "killed_at": killed.timeIntervalSince1970]
            }
            return ["active": false]
        }
        return json(200, body, ["Cache-Control": "no-store"])
    }
}
