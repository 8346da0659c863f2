import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// Token exchange (RFC 8693) as an IdP that offers delegation does it: a confidential client
/// trades an access token it holds (still active) for one narrowed to an audience or resource
/// (RFC 8707) and a subset of its scopes; with an actor token signed by a key the client
/// registered (`actor_jwks`), the new token names the actor in `act` (§4.1). A bound subject
/// token needs a proof of its key, and the new token is bound to it too.
extension DevIdP {
    func exchangeToken(_ form: [String: String], clientID: String, jkt: String?, issuer: String) -> HTTPResponse {
        func refuse(_ code: String, _ why: String) -> HTTPResponse { json(400, ["error": code, "error_description": why]) }
        guard let client = state.withLock({ $0.clients[clientID] }), client.confidential else {
            return refuse("unauthorized_client", "token exchange is for confidential clients")
        }
        guard form["subject_token_type"] == TokenExchange.accessTokenType, let subject = form["subject_token"] else {
            return refuse("invalid_request", "subject_token as an access token")
        }
        if let wanted = form["requested_token_type"], wanted != TokenExchange.accessTokenType {
            return refuse("invalid_request", "only access tokens are issued")
        }
        let now = Date()
        // Not a JWT: no jti, so no token of ours — refused below.
        let jti = (try? CompactJWS.parse(subject))?.claims["jti"] as? String
        let held = state.withLock { s -> IssuedAccessToken? in
            guard let jti, let at = s.accessTokens[jti], at.digest == DevIdPCrypto.sha256(subject), at.expires > now, at.client == clientID,
                  at.family.map({ f in s.families[f].map { !$0.revoked && at.number >= $0.accessValidFrom } ?? false }) ?? true else { return nil }
            return at
        }
        guard let at = held else { return refuse("invalid_grant", "the subject token is not an active access token of this client") }
        if let bound = at.jkt, bound != jkt { return refuse("invalid_dpop_proof", "the subject token is bound to another key") }
        let granted = Set(at.scope.split(separator: " ").map(String.init))
        let asked = form["scope"].map { Set($0.split(separator: " ").map(String.init)) } ?? granted
        guard asked.isSubset(of: granted), !asked.isEmpty else { return refuse("invalid_scope", "more than the subject token's scope") }
        let audience = form["audience"] ?? form["resource"]
        if !client.exchangeAudiences.isEmpty, !client.exchangeAudiences.contains(audience ?? "") {
            return refuse("invalid_target", "not an audience this client may exchange for")
        }
        var act: [String: Any]?
        if let actor = form["actor_token"] {
            guard form["actor_token_type"] == TokenExchange.jwtTokenType, let a = verifyActor(actor, keys: client.actorJWKS, issuer: issuer) else {
                return refuse("invalid_request", "the actor token is not a valid JWT signed with the client's actor keys")
            }
            act = a
        }
        let t = Int(now.timeIntervalSince1970), ttl = 300
        var rng = SystemRandomNumberGenerator()
        let newJTI = Identifiers.token(bytes: 16, using: &rng)
        let scope = asked.sorted().joined(separator: " ")
        var claims: [String: Any] = ["iss": issuer, "sub": at.subject, "aud": audience ?? clientID, "client_id": clientID, "scope": scope,
                                     "iat": t, "exp": t + ttl, "jti": newJTI]
        if let act { claims["act"] = act }
        if let jkt { claims["cnf"] = ["jkt": jkt] }
        let token = state.withLock { $0.keys }.sign(claims, alg: .es256, type: "at+jwt")
        state.withLock { s in
            s.record(jti: newJTI, IssuedAccessToken(digest: DevIdPCrypto.sha256(token), client: clientID, subject: at.subject, scope: scope,
                                                    expires: now.addingTimeInterval(TimeInterval(ttl)), family: nil, jkt: jkt), now: now)
            s.stats[clientID, default: .init()].exchanges += 1
        }
        var body: [String: Any] = ["access_token": token, "issued_token_type": TokenExchange.accessTokenType,
                                   "token_type": jkt == nil ? "Bearer" : "DPoP", "expires_in": ttl, "scope": scope]
        if state.withLock({ $0.take(clientID, atAuthorize: false) }) == .noExpiresIn { body["expires_in"] = nil }
        return json(200, body, ["Cache-Control": "no-store"])
    }

    /// The actor token's `act` (its `sub` and `iss`) when it is signed by one of `keys`, meant for
    /// `issuer`, and unexpired; nil otherwise.
    private func verifyActor(_ jwt: String, keys: [JSONWebKey], issuer: String) -> [String: Any]? {
        guard let jws = try? CompactJWS.parse(jwt), let alg = JWSAlgorithm(rawValue: jws.algorithm) else { return nil }
        let verifier = OpenSSLSignatureVerifier()
        guard keys.contains(where: { (jws.kid == nil || $0.kid == jws.kid) && verifier.verify(alg, key: $0, input: jws.signingInput, signature: jws.signature) }) else {
            return nil
        }
        let c = jws.claims, now = Date().timeIntervalSince1970
        guard c["aud"] as? String == issuer, let exp = (c["exp"] as? NSNumber)?.doubleValue, exp > now,
              let sub = c["sub"] as? String, let iss = c["iss"] as? String else { return nil }
        return ["sub": sub, "iss": iss]
    }
}
