import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// DPoP (RFC 9449) as an authorization server and a resource server check it: proofs on the
/// token endpoint bind the tokens issued (`cnf.jkt`, `token_type: DPoP`) and must keep the
/// family's key; the protected resource (DevIdP+ResourceAuth) accepts a bound token only with a
/// fresh proof of its key for that request (`htm`, `htu`, `ath`, unused `jti`). Nonces (§8, §9)
/// are switched on per endpoint by `POST /admin/settings {"dpop_nonce": bool, "resource_nonce": bool}`,
/// or glewlwyd's way by `{"glewlwyd_nonce": true}`: one nonce per client for token, PAR and userinfo.
extension DevIdP {
    /// What a proof check found: the key's thumbprint, or the answer refusing the request.
    enum ProofCheck {
        case none
        case valid(jkt: String)
        case refused(code: String, why: String)
        case nonceNeeded(String)
    }

    /// Checks the request's `DPoP` header for `htm` and `path` at the issuer the request was
    /// addressed to (§4.3).
    /// `expected`: the nonce required instead of the server-wide one (glewlwyd mode's client's).
    func checkProof(_ req: HTTPRequest, path: String, accessToken: String?, nonceRequired: Bool, expected: String? = nil) -> ProofCheck {
        guard let proof = req.header("dpop") else { return .none }
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let h = Base64URL.decode(String(parts[0])), let p = Base64URL.decode(String(parts[1])),
              let sig = Base64URL.decode(String(parts[2])),
              let header = (try? JSONSerialization.jsonObject(with: Data(h))) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: Data(p))) as? [String: Any] else {
            return .refused(code: "invalid_dpop_proof", why: "not a JWS")
        }
        guard header["typ"] as? String == "dpop+jwt" else { return .refused(code: "invalid_dpop_proof", why: "typ is not dpop+jwt") }
        guard let alg = (header["alg"] as? String).flatMap(JWSAlgorithm.init(rawValue:)) else {
            return .refused(code: "invalid_dpop_proof", why: "alg is not an asymmetric algorithm")
        }
        guard let jwkObject = header["jwk"] as? [String: Any], jwkObject["d"] == nil, let jwk = JSONWebKey(json: jwkObject) else {
            return .refused(code: "invalid_dpop_proof", why: "no public jwk")
        }
        let input = Array(proof.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard OpenSSLSignatureVerifier().verify(alg, key: jwk, input: input, signature: sig) else {
            return .refused(code: "invalid_dpop_proof", why: "bad signature")
        }
        guard claims["htm"] as? String == req.method else { return .refused(code: "invalid_dpop_proof", why: "htm") }
        guard let htu = claims["htu"] as? String, DPoPProof.targetURI(htu) == DPoPProof.targetURI(issuer(for: req) + path) else {
            return .refused(code: "invalid_dpop_proof", why: "htu")
        }
        let now = Date().timeIntervalSince1970
        guard let iat = (claims["iat"] as? NSNumber)?.doubleValue, abs(iat - now) <= 60 else {
            return .refused(code: "invalid_dpop_proof", why: "iat")
        }
        if let accessToken {
            guard claims["ath"] as? String == Base64URL.encode(DevIdPCrypto.sha256(accessToken)) else { return .refused(code: "invalid_dpop_proof", why: "ath") }
        }
        guard let jti = claims["jti"] as? String, !jti.isEmpty else { return .refused(code: "invalid_dpop_proof", why: "no jti") }
        let fresh = state.withLock { s -> (used: Bool, nonce: String) in
            s.dpopJTIs = s.dpopJTIs.filter { $0.value > now - 120 }
            let used = s.dpopJTIs[jti] != nil
            s.dpopJTIs[jti] = now
            return (used, expected ?? s.dpopNonce)
        }
        guard !fresh.used else { return .refused(code: "invalid_dpop_proof", why: "jti replayed") }
        if nonceRequired, claims["nonce"] as? String != fresh.nonce {
            state.withLock { $0.dpopNonceChallenges += 1 }
            return .nonceNeeded(fresh.nonce)
        }
        return .valid(jkt: Base64URL.encode(DevIdPCrypto.sha256(jwk.thumbprintInput)))
    }

    /// In glewlwyd mode, the client's nonce (made on first use); otherwise nil.
    func glewlwydNonce(_ clientID: String) -> String? {
        state.withLock { s in s.settings.glewlwydNonce ? s.clientNonce(clientID) : nil }
    }

    /// `r` with the client's current nonce in `DPoP-Nonce` when glewlwyd mode is on: glewlwyd
    /// sends it on its answers, successes included.
    func withClientNonce(_ r: HTTPResponse, _ clientID: String) -> HTTPResponse {
        guard let n = glewlwydNonce(clientID), !r.headers.contains(where: { $0.name == "DPoP-Nonce" }) else { return r }
        var r = r
        r.headers.append((name: "DPoP-Nonce", value: n))
        return r
    }

    /// `POST /admin/dpop-nonce/rotate {"client_id"?}`: glewlwyd mode's nonce changes, for one
    /// client or all; answers how many changed.
    func rotateClientNonces(_ req: HTTPRequest) -> HTTPResponse {
        let client = (req.body.isEmpty ? [:] : Self.object(req) ?? [:])["client_id"] as? String
        let n = state.withLock { s -> Int in
            let ids = client.map { [$0] } ?? Array(s.clientNonces.keys)
            for id in ids { s.clientNonces[id] = DevIdPState.newNonce() }
            return ids.count
        }
        return json(200, ["rotated": n])
    }

    /// The token endpoint's refusal of a proof (§5, §8): 400, the nonce in `DPoP-Nonce`.
    func tokenRefusal(_ check: ProofCheck) -> HTTPResponse? {
        switch check {
        case .none, .valid: return nil
        case .refused(let code, let why): return json(400, ["error": code, "error_description": why])
        case .nonceNeeded(let n):
            return json(400, ["error": "use_dpop_nonce", "error_description": "a nonce is required"], ["DPoP-Nonce": n])
        }
    }
}
