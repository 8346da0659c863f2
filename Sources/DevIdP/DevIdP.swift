import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation
import Synchronization

/// DevIdP is the development OpenID provider the tests and `make run` speak to over HTTP, with
/// XID's semantics: PKCE S256 only; refresh tokens only with `offline_access` and only
/// for confidential clients; refresh tokens rotate on every use with NO grace period, and a
/// rotated token presented again revokes its whole family, including the tokens just issued to
/// the winner of a race. Access tokens are ES256 JWTs (`typ: at+jwt`); ID tokens are ES256,
/// RS256 or PS256 per client; refreshed ID tokens carry no nonce. Codes live 60 s and are single
/// use. Clients authenticate with client_secret_basic/post, private_key_jwt, or not at all — and,
/// in mutual-TLS mode (`mutualTLS`: its listener asks for optional client certificates), with
/// their certificate (RFC 8705 §2: by the subject DN of a certificate of the listener's CA, or by
/// a registered thumbprint), at the endpoints of `mtls_endpoint_aliases` (§5, below
/// `/mtls/`) as at the others; such a client's access tokens carry `cnf.x5t#S256` (§3.1).
///
/// Token introspection (RFC 7662) at `/introspect`, unless switched off. DPoP (RFC 9449) at the
/// token endpoint (DevIdP+DPoP), and a protected resource below `/resource` (DevIdP+Resource)
/// whose router is streamed: serve `router()` with `MHDServer(config:streams:handle:)`.
///
/// Test-only endpoints (unauthenticated, loopback only): `POST /admin/clients`,
/// `POST /admin/failures`, `POST /admin/misbehave`, `POST /admin/rotate-keys`,
/// `POST /admin/revoke-subject`, `POST /admin/grants`, `POST /admin/logout-token`,
/// `POST /admin/refresh-fault`, `POST /admin/stall`, `POST /admin/settings`, `POST /admin/dpop-nonce/rotate`,
/// `POST /admin/resource/{kill,fault,settings}`, `GET /stats`.
/// Late answers are `.later` replies and never hold one of the server's threads.
///
/// It also plays real providers, each with its documented quirks, below `/p/<name>/…`
/// (Personality, DevIdP+Personalities), with the same clients and the same refresh-token families.
///
/// One process may play many issuers (DevIdP+Issuers): every handler takes its issuer from the
/// request (`issuer(for:)`), never from the instance.
public final class DevIdP: Sendable {
    /// The issuer of requests addressed to no issuer host (the only one without `issuerHosts`).
    public let issuer: String
    /// With it, `<label>.<issuerHosts>` hosts are issuers of their own (DevIdP+Issuers).
    public let issuerHosts: String?
    /// `http` or `https`, the default issuer's: the scheme of every issuer served.
    let scheme: String
    /// Client certificates are asked for on the listener: the metadata advertises RFC 8705.
    public let mutualTLS: Bool
    let state: Mutex<DevIdPState>
    /// The server's counts of its connections (`connections_opened`, `tls_handshakes_full`,
    /// `tls_handshakes_resumed` in `/stats`): tests and benchmarks see from them whether a client
    /// reused its connections and resumed its TLS sessions. Set once the server exists.
    public let connectionCounts = Mutex<@Sendable () -> ConnectionCounts>({ ConnectionCounts() })

    /// Connections accepted, and TLS handshakes by kind (one per connection, at its first request).
    public struct ConnectionCounts: Sendable {
        public var opened = 0, handshakesFull = 0, handshakesResumed = 0
        public init(opened: Int = 0, handshakesFull: Int = 0, handshakesResumed: Int = 0) {
            self.opened = opened
            self.handshakesFull = handshakesFull
            self.handshakesResumed = handshakesResumed
        }
    }

    public init(issuer: String, accessTTL: Int, issuerHosts: String? = nil, mutualTLS: Bool = false) {
        self.issuer = issuer
        self.mutualTLS = mutualTLS
        self.issuerHosts = issuerHosts
        scheme = issuer.hasPrefix("https://") ? "https" : "http"
        state = Mutex(DevIdPState(defaultAccessTTL: accessTTL))
    }

    public func router() -> Router {
        var r = Router()
        r.add("GET", "/.well-known/openid-configuration") { [self] req in .now(countedDiscovery(issuer(for: req))) }
        r.add("GET", "/jwks") { [self] _ in .now(jwks()) }
        r.add("GET", "/authorize") { [self] req in .now(authorize(req)) }
        r.add("POST", "/token") { [self] req in token(req) }
        r.add("POST", "/par") { [self] req in .now(pushAuthorizationRequest(req)) }
        r.add("POST", "/revoke") { [self] req in revoke(req) }
        r.add("POST", "/introspect") { [self] req in .now(introspect(req)) }
        r.add("GET", "/userinfo") { [self] req in .now(userinfo(req)) }
        if mutualTLS {
            // RFC 8705 §5: the aliases a client doing mutual TLS uses; the same endpoints.
            r.add("POST", "/mtls/token") { [self] req in token(req) }
            r.add("POST", "/mtls/par") { [self] req in .now(pushAuthorizationRequest(req)) }
            r.add("POST", "/mtls/revoke") { [self] req in revoke(req) }
            r.add("POST", "/mtls/introspect") { [self] req in .now(introspect(req)) }
        }
        addResource(to: &r)
        r.add("GET", "/end_session") { [self] req in .now(endSession(req)) }
        r.add("GET", "/stats") { [self] req in .now(stats(req.queryValue("client_id"), times: req.queryValue("times") == "1")) }
        r.add("POST", "/admin/clients") { [self] req in .now(registerClient(req)) }
        r.add("POST", "/admin/failures") { [self] req in .now(setFailure(req)) }
        r.add("POST", "/admin/misbehave") { [self] req in .now(misbehave(req)) }
        r.add("POST", "/admin/rotate-keys") { [self] req in .now(rotateKeys(req)) }
        r.add("POST", "/admin/revoke-subject") { [self] req in .now(revokeSubject(req)) }
        r.add("POST", "/admin/grants") { [self] req in .now(bulkGrants(req)) }
        r.add("POST", "/admin/logout-token") { [self] req in .now(logoutToken(req)) }
        r.add("POST", "/admin/refresh-fault") { [self] req in .now(setRefreshFault(req)) }
        r.add("POST", "/admin/stall") { [self] req in .now(setStall(req)) }
        r.add("POST", "/admin/settings") { [self] req in .now(changeSettings(req)) }
        r.add("POST", "/admin/dpop-nonce/rotate") { [self] req in .now(rotateClientNonces(req)) }
        addResourceAdmin(to: &r)
        r.add("POST", "/receiver/{name}") { [self] req in .now(receive(req)) }
        r.add("GET", "/receiver/{name}") { [self] req in .now(received(req)) }
        r.add("POST", "/admin/receiver") { [self] req in .now(setReceiver(req)) }
        r.add("GET", "/p") { [self] req in .now(personalityIndex(req)) }
        addPersonalities(to: &r)
        return r
    }

    /// The discovery document (OIDC Discovery 1.0 §3); `introspection_endpoint` (RFC 8414 §2)
    /// only while introspection is switched on.
    func discovery(_ issuer: String) -> [String: Any] {
        var d: [String: Any] = [
            "issuer": issuer,
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "jwks_uri": issuer + "/jwks",
            "revocation_endpoint": issuer + "/revoke",
            "userinfo_endpoint": issuer + "/userinfo",
            "end_session_endpoint": issuer + "/end_session",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", TokenExchange.grantType],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256", "PS256"],
            "id_token_signing_alg_values_supported": ["ES256", "RS256", "PS256"],
            "subject_types_supported": ["public"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "authorization_response_iss_parameter_supported": true,
            "backchannel_logout_supported": true,
            "backchannel_logout_session_supported": true,
            "dpop_signing_alg_values_supported": ["ES256", "PS256"],
        ]
        let settings = state.withLock { $0.settings }
        // RFC 9207 can be switched off, as an IdP that stops sending `iss` would.
        if !settings.issParameter { d["authorization_response_iss_parameter_supported"] = nil }
        // RFC 7009 is optional: an issuer may offer no revocation at all.
        if !settings.revocation { d["revocation_endpoint"] = nil }
        if settings.par != "off" || settings.fapi2 { d["pushed_authorization_request_endpoint"] = issuer + "/par" }
        if settings.fapi2 {
            d["require_pushed_authorization_requests"] = true
            d["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
            d["token_endpoint_auth_signing_alg_values_supported"] = ["ES256", "PS256"]
        }
        if let algs = settings.idTokenAlgorithms { d["id_token_signing_alg_values_supported"] = algs }
        if mutualTLS {
            // RFC 8705 §2.1, §2.2, §3.3, §5.
            d["token_endpoint_auth_methods_supported"] = (d["token_endpoint_auth_methods_supported"] as? [String] ?? [])
                + ["tls_client_auth", "self_signed_tls_client_auth"]
            d["tls_client_certificate_bound_access_tokens"] = true
            var aliases = ["token_endpoint": issuer + "/mtls/token"]
            if d["revocation_endpoint"] != nil { aliases["revocation_endpoint"] = issuer + "/mtls/revoke" }
            if d["pushed_authorization_request_endpoint"] != nil { aliases["pushed_authorization_request_endpoint"] = issuer + "/mtls/par" }
            if settings.introspection { aliases["introspection_endpoint"] = issuer + "/mtls/introspect" }
            d["mtls_endpoint_aliases"] = aliases
        }
        if settings.par == "required" { d["require_pushed_authorization_requests"] = true }
        if settings.introspection {
            d["introspection_endpoint"] = issuer + "/introspect"
            d["introspection_endpoint_auth_methods_supported"] = d["token_endpoint_auth_methods_supported"]
        }
        return d
    }

    func jwks() -> HTTPResponse {
        let keys = state.withLock { s -> [JSONWebKey] in
            s.jwksFetches += 1
            return s.keys.published
        }
        return json(200, ["keys": keys.map(\.members)])
    }

    // MARK: authorization endpoint

    func authorize(_ req: HTTPRequest) -> HTTPResponse {
        var q = Dictionary(req.query.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        // RFC 9126 §4: a request_uri stands for the pushed parameters (once, before it expires,
        // for the client that pushed it); with PAR required nothing else is accepted.
        if let uri = q["request_uri"] {
            let pushed = state.withLock { s in s.pushed.removeValue(forKey: uri) }
            guard let p = pushed, p.expires > Date(), p.client == q["client_id"] else {
                return json(400, ["error": "invalid_request_uri", "error_description": "unknown, used or expired request_uri"])
            }
            q = p.parameters
        } else if state.withLock({ $0.settings.par == "required" || $0.settings.fapi2 }) {
            return json(400, ["error": "invalid_request", "error_description": "pushed authorization requests are required"])
        }
        guard let clientID = q["client_id"], let redirect = q["redirect_uri"],
              let client = state.withLock({ $0.clients[clientID] }), client.redirectURIs.contains(redirect) else {
            return json(400, ["error": "invalid_request", "error_description": "unknown client or redirect_uri"])
        }
        let (mode, sendsIss) = state.withLock { ($0.take(clientID, atAuthorize: true), $0.settings.issParameter) }
        let issuer = issuer(for: req)
        func back(_ params: String) -> HTTPResponse {
            var iss = sendsIss ? "&iss=" + FormEncoding.encode(issuer) : ""
            if mode == .wrongIssParam { iss = "&iss=" + FormEncoding.encode(issuer + "/other") }
            if mode == .omitIssParam { iss = "" }
            return .redirect(redirect + (redirect.contains("?") ? "&" : "?") + params + "&state=\(FormEncoding.encode(q["state"] ?? ""))" + iss)
        }
        if mode == .accessDenied { return back("error=access_denied") }
        guard q["response_type"] == "code" else { return back("error=unsupported_response_type") }
        guard q["code_challenge_method"] == "S256", let challenge = q["code_challenge"], challenge.count == 43 else { return back("error=invalid_request") }
        guard let subject = q["login_hint"], !subject.isEmpty else { return back("error=login_required") }
        var rng = SystemRandomNumberGenerator()
        let code = Identifiers.token(bytes: 32, using: &rng)
        let grant = DevIdPState.Code(client: clientID, redirectURI: redirect, challenge: challenge, nonce: q["nonce"],
                                     scope: q["scope"] ?? "openid", subject: subject, expires: Date().addingTimeInterval(60),
                                     dpopJKT: q["dpop_jkt"])
        state.withLock { $0.codes[code] = grant }
        return back("code=\(code)")
    }

    func json(_ status: Int, _ object: [String: Any], _ headers: [String: String] = [:]) -> HTTPResponse {
        // Objects of strings, numbers, booleans, arrays and objects only: serializing cannot fail.
        var r = HTTPResponse.json(status, [UInt8]((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
        for (k, v) in headers { r.headers.append((k, v)) }
        return r
    }
}
