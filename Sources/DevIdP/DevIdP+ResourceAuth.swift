import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// The protected resource's token check, for every route below `/resource`. A bearer token
/// needs `Authorization: Bearer` (RFC 6750 §2.1); a DPoP-bound one `Authorization: DPoP` and a
/// fresh proof of its key for this very request (RFC 9449 §7.1: `htm`, `htu` — the request's URL
/// without query and fragment, §4.3 —, `ath`, an unused `jti`, the nonce while `resource_nonce`
/// is on); a bound token presented as bearer is refused (§7.2). The token must be one this IdP
/// issued, whole, and alive (`DevIdPState.death(of:at:)`).
///
/// Refusals are 401 with a challenge of the token's own scheme (RFC 6750 §3, RFC 9449 §7.1):
/// `Bearer realm="dev", error="invalid_token", error_description=…`, or `DPoP realm="dev",
/// error=…, algs="ES256 PS256"` (and `DPoP-Nonce` with `use_dpop_nonce`, §9). A request without
/// credentials gets both challenges and no error attribute (RFC 6750 §3.1). A token bound to a
/// client certificate (`cnf.x5t#S256`, RFC 8705 §3) needs a connection presenting that
/// certificate (mutual-TLS mode), else `invalid_token`. With `plain_401` on,
/// a token's refusal is `Bearer realm="dev"` alone.
extension DevIdP {
    enum ResourceAccess {
        case granted(IssuedAccessToken)
        case refused(HTTPResponse)
    }

    static let resourceRealm = "dev"
    static let resourceAlgs = "ES256 PS256"

    func authorizeResource(_ req: HTTPRequest) -> ResourceAccess {
        let (plain, nonceRequired) = state.withLock { ($0.resource.plain401, $0.settings.resourceNonce) }
        guard let auth = req.header("authorization"), let space = auth.firstIndex(of: " ") else {
            countRefusal("no_token", client: nil)
            return .refused(json(401, ["error": "unauthorized", "error_description": "no access token"], [
                "WWW-Authenticate": "Bearer realm=\"\(Self.resourceRealm)\", DPoP realm=\"\(Self.resourceRealm)\", algs=\"\(Self.resourceAlgs)\""]))
        }
        let scheme = auth[..<space].lowercased(), token = String(auth[auth.index(after: space)...])
        // Not a JWT: no jti, so no token of ours.
        let jti = (try? CompactJWS.parse(token))?.claims["jti"] as? String
        let digest = jti.map { _ in DevIdPCrypto.sha256(token) }
        let now = Date()
        let (issued, death) = state.withLock { s -> (IssuedAccessToken?, String?) in
            guard let jti, let at = s.accessTokens[jti], at.digest == digest else { return (nil, nil) }
            return (at, s.death(of: at, at: now))
        }
        // The challenge is of the token's scheme when the token is known, else of the one used.
        let dpop = issued.map { $0.jkt != nil } ?? (scheme == "dpop")
        func refuse(_ code: String, _ why: String, nonce: String? = nil) -> ResourceAccess {
            countRefusal(code, client: issued?.client)
            return .refused(resourceRefusal(code, why, dpop: dpop, nonce: nonce, plain: plain && code == "invalid_token"))
        }
        guard let at = issued else { return refuse("invalid_token", "unknown token") }
        if let death { return refuse("invalid_token", "the token is \(death)") }
        // RFC 8705 §3: a certificate-bound token is accepted only on a connection that
        // presented that certificate (verified by the listener in mutual-TLS mode).
        if let x5t = at.x5t {
            guard let presented = req.clientCertificateSHA256 else {
                return refuse("invalid_token", "the token is bound to a client certificate and the connection presented none")
            }
            guard presented == x5t else { return refuse("invalid_token", "the token is bound to another client certificate") }
            state.withLock { $0.resourceCounters[at.client, default: .init()].certificateBound += 1 }
        }
        if let bound = at.jkt {
            guard scheme == "dpop" else { return refuse("invalid_token", "a DPoP-bound token presented as \(scheme)") }
            // §4.3: exactly one DPoP header.
            guard req.allHeaders.lazy.filter({ $0.name == "dpop" }).count <= 1 else { return refuse("invalid_dpop_proof", "more than one DPoP header") }
            switch checkProof(req, path: req.path, accessToken: token, nonceRequired: nonceRequired) {
            case .none: return refuse("invalid_dpop_proof", "no proof")
            case .refused(let code, let why): return refuse(code, why)
            case .nonceNeeded(let n): return refuse("use_dpop_nonce", "a nonce is required", nonce: n)
            case .valid(let jkt):
                guard jkt == bound else { return refuse("invalid_token", "the proof's key is not the token's") }
            }
        } else {
            guard scheme == "bearer" else { return refuse("invalid_token", "a bearer token presented as \(scheme)") }
        }
        state.withLock { $0.resourceCounters[at.client, default: .init()].accepted += 1 }
        return .granted(at)
    }

    /// A 401 refusing a token, with its challenge.
    func resourceRefusal(_ code: String, _ why: String, dpop: Bool, nonce: String?, plain: Bool) -> HTTPResponse {
        if plain {
            return json(401, ["message": "unauthorized"], ["WWW-Authenticate": "Bearer realm=\"\(Self.resourceRealm)\""])
        }
        // A quoted-string (RFC 9110 §5.6.4) without quotes or backslashes to escape.
        let description = why.filter { $0 != "\"" && $0 != "\\" }
        let params = "realm=\"\(Self.resourceRealm)\", error=\"\(code)\", error_description=\"\(description)\""
        var h = ["WWW-Authenticate": dpop ? "DPoP \(params), algs=\"\(Self.resourceAlgs)\"" : "Bearer \(params)"]
        if let nonce { h["DPoP-Nonce"] = nonce }
        return json(401, ["error": code, "error_description": why], h)
    }

    func countRefusal(_ code: String, client: String?) {
        state.withLock { $0.resourceCounters[client ?? "", default: .init()].refused[code, default: 0] += 1 }
    }
}
