import BrokerCore
import Foundation

/// OIDCTokenEndpoint calls a client's provider: its token and revocation endpoints, found through
/// discovery, RFC 8414 metadata or the client's provider descriptor, with the client's
/// authentication method — one code path for refresh, code exchange and revocation (RFC 6749
/// §2.3, OIDC Core §9), each request and answer shaped as the descriptor says (extra parameters,
/// a JSON body, form-encoded answers, tokens where its pointers say): `client_secret_basic` (form-encoded id
/// and secret in HTTP Basic), `client_secret_post`, `private_key_jwt` (a signed assertion, with
/// `client_id` in the form as XID requires), `tls_client_auth` and `self_signed_tls_client_auth`
/// (RFC 8705 §2: `client_id` in the form, the client's certificate presented on the TLS
/// connection), or `none` (client_id in the form, PKCE only).
/// Every call for a client trusts what the client's registration trusts: its own anchors, or
/// the deployment's CA file — for its discovery document as for its endpoints.
public final class OIDCTokenEndpoint: TokenEndpoint {
    public typealias SecretSource = @Sendable (ClientRegistration) throws -> String?
    /// The client's TLS client certificate and key, unsealed; nil when it has none.
    public typealias CertificateSource = @Sendable (ClientRegistration) throws -> ClientTLSCredential?

    let http: BlockingHTTP
    let metadata: any IssuerDirectory
    private let secret: SecretSource
    private let certificate: CertificateSource
    private let assertions: (any ClientAssertionSigner)?
    let clock: any Clock
    /// Each client's current DPoP nonce at its authorization server (RFC 9449 §8): the next
    /// proof to any of its endpoints carries it, so that a server that wants nonces asks again
    /// only when it changes them — once for the fleet.
    public let nonces: ServerNonces

    public init(http: BlockingHTTP, metadata: any IssuerDirectory, clock: any Clock, assertions: (any ClientAssertionSigner)? = nil,
                nonces: ServerNonces = ServerNonces(), certificate: @escaping CertificateSource = { _ in nil },
                secret: @escaping SecretSource) {
        self.certificate = certificate
        self.nonces = nonces
        self.http = http
        self.metadata = metadata
        self.secret = secret
        self.assertions = assertions
        self.clock = clock
    }

    /// A refresh-token grant, sent at most once (`once`: libcurl never re-sends it on its own),
    /// waited for up to `patience`.
    public func refresh(client: ClientRegistration, refreshToken: String, patience: TimeInterval, dpop: DPoPProof?) throws(TokenEndpointError)
        -> TokenGrant {
        let meta = try metadata.metadata(for: client, now: clock.now())
        return try rereadingIfGone(client) { () throws(TokenEndpointError) in
            let (reply, context) = try call(client, meta.tokenEndpoint, .token, [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
                                                + client.descriptor.tokenRequest.refreshParams.map { ($0.name, $0.value) },
                                            timeout: patience, once: true, dpop: dpop)
            return try told(context) { () throws(TokenEndpointError) in
                try TokenResponse.parse(reply, TokenResponse.Reading(client.descriptor, subject: false))
            }
        }
    }

    /// The client-credentials grant (RFC 6749 §4.4): `scope`, `resource` (RFC 8707 §2) and
    /// `audience` as asked, the answer read as a
    /// refresh's. It spends nothing, so it is not marked `once`.
    public func clientCredentials(client: ClientRegistration, ask: AppTokenAsk, dpop: DPoPProof?) throws(TokenEndpointError) -> TokenGrant {
        let meta = try metadata.metadata(for: client, now: clock.now())
        var form = [("grant_type", "client_credentials")]
        if !ask.scopes.isEmpty { form.append(("scope", ask.scopes.joined(separator: client.descriptor.authorization.scopeSeparator))) }
        if let r = ask.resource { form.append(("resource", r)) }
        if let a = ask.audience { form.append(("audience", a)) }
        return try rereadingIfGone(client) { () throws(TokenEndpointError) in
            let (reply, context) = try call(client, meta.tokenEndpoint, .token, form, dpop: dpop)
            return try told(context) { () throws(TokenEndpointError) in
                try TokenResponse.parse(reply, TokenResponse.Reading(client.descriptor, subject: false))
            }
        }
    }

    /// Runs `body`; when it fails because the endpoint cannot be reached or is not there (404,
    /// 405), the endpoint may have moved or gone with a metadata change: the metadata is read
    /// again (rate-limited) before the next attempt.
    private func rereadingIfGone<T>(_ client: ClientRegistration, _ body: () throws(TokenEndpointError) -> T) throws(TokenEndpointError) -> T {
        do { return try body() } catch {
            switch error {
            case .notSent, .refused(404, _), .refused(405, _): metadata.reread(for: client, now: clock.now())
            case .oauth(let o) where o.status == 404 || o.status == 405: metadata.reread(for: client, now: clock.now())
            default: break
            }
            throw error
        }
    }

    /// Codes are single use too: sent at most once.
    public func exchangeCode(client: ClientRegistration, code: String, verifier: String, dpop: DPoPProof?) throws(TokenEndpointError) -> TokenGrant {
        let meta = try metadata.metadata(for: client, now: clock.now())
        var form = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", client.redirectURI)]
        if client.descriptor.authorization.pkce { form.append(("code_verifier", verifier)) }
        form += client.descriptor.tokenRequest.params.map { ($0.name, $0.value) }
        let (reply, context) = try call(client, meta.tokenEndpoint, .token, form, once: true, dpop: dpop)
        return try told(context) { () throws(TokenEndpointError) in try TokenResponse.parse(reply, TokenResponse.Reading(client.descriptor, subject: true)) }
    }

    /// RFC 7662 §2.1-2.2 with the client's authentication: nil when the issuer advertises no
    /// `introspection_endpoint`; otherwise the answer's `active` member.
    public func introspect(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> Bool? {
        let meta = try metadata.metadata(for: client, now: clock.now())
        guard let endpoint = meta.introspectionEndpoint else { return nil }
        let reply = try call(client, endpoint, .introspection, [("token", token), ("token_type_hint", hint)]).reply
        guard reply.status == 200 else { throw .transient(reason: "introspection endpoint: HTTP \(reply.status)", retryAfter: reply.retryAfter) }
        guard let doc = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any], let active = doc["active"] as? Bool else {
            throw .invalidResponse("introspection endpoint: no active member")
        }
        return active
    }

    /// RFC 9126 §2: the request pushed with the client's authentication (and a DPoP proof when
    /// given, RFC 9449 §10.1); its refusals (§2.3) keep the IdP's RFC 6749 code. An endpoint
    /// that is gone makes the next login read the metadata again (`rereadingIfGone`).
    public func pushAuthorizationRequest(client: ClientRegistration, parameters: [(String, String)], dpop: DPoPProof?) throws(TokenEndpointError)
        -> (requestURI: String, expiresIn: Int) {
        let meta = try metadata.metadata(for: client, now: clock.now())
        guard let endpoint = meta.pushedAuthorizationRequestEndpoint else { throw .metadata("discovery: no pushed_authorization_request_endpoint") }
        return try rereadingIfGone(client) { () throws(TokenEndpointError) in
            let (reply, context) = try call(client, endpoint, .pushedAuthorizationRequest, parameters, dpop: dpop)
            return try told(context) { () throws(TokenEndpointError) in try pushed(reply) }
        }
    }

    /// A PAR answer read (RFC 9126 §2.2, §2.3).
    private func pushed(_ reply: BlockingHTTP.Reply) throws(TokenEndpointError) -> (requestURI: String, expiresIn: Int) {
        if reply.status >= 500 || reply.status == 429 {
            throw .transient(reason: "pushed authorization request endpoint: HTTP \(reply.status)", retryAfter: reply.retryAfter)
        }
        // RFC 9126 §2.2: 201 with request_uri and expires_in; anything else is §2.3's error answer.
        guard reply.status == 201 || reply.status == 200, let doc = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
              let uri = doc["request_uri"] as? String, !uri.isEmpty, let expires = (doc["expires_in"] as? NSNumber)?.intValue, expires > 0 else {
            _ = try TokenResponse.parse(reply, endpoint: "pushed authorization request endpoint")   // an RFC 6749 §5.2 error, kept as it came
            throw .invalidResponse("pushed authorization request endpoint: HTTP \(reply.status) without request_uri and expires_in")
        }
        return (uri, expires)
    }

    /// RFC 8693 §2.1-2.2: the subject token as an access token, `audience`, `resource` and `scope`
    /// when asked, the actor token as a JWT; the answer must name its `issued_token_type`.
    public func exchange(client: ClientRegistration, subjectToken: String, _ ask: TokenExchange, actorToken: String?, dpop: DPoPProof?)
        throws(TokenEndpointError) -> ExchangedToken {
        let meta = try metadata.metadata(for: client, now: clock.now())
        var form = [("grant_type", TokenExchange.grantType), ("subject_token", subjectToken),
                    ("subject_token_type", TokenExchange.accessTokenType), ("requested_token_type", TokenExchange.accessTokenType)]
        if let a = ask.audience { form.append(("audience", a)) }
        if let r = ask.resource { form.append(("resource", r)) }
        if !ask.scopes.isEmpty { form.append(("scope", ask.scopes.joined(separator: " "))) }
        if let actorToken { form += [("actor_token", actorToken), ("actor_token_type", TokenExchange.jwtTokenType)] }
        let (reply, context) = try call(client, meta.tokenEndpoint, .token, form, dpop: dpop)
        let grant = try told(context) { () throws(TokenEndpointError) in try TokenResponse.parse(reply) }
        guard let type = (try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any])?["issued_token_type"] as? String,
              !type.isEmpty else { throw .invalidResponse("token endpoint: a token exchange answer without issued_token_type") }
        return ExchangedToken(grant: grant, issuedTokenType: type)
    }

    /// RFC 7009 §2.2: 200 means revoked (or already invalid); 503 is worth retrying. A provider
    /// whose descriptor describes its own request is revoked that way (`described`); one
    /// without revocation (a descriptor that says none, or no revocation_endpoint in its
    /// metadata) is answered `.unsupported`: retrying could not change it.
    public func revoke(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> IdPRevocation {
        let r = client.descriptor.revocation
        // The descriptor names the token to revoke: the session's other one is not sent, since
        // revoking the one ends the grant (and some providers refuse a token they dropped with it).
        if r.style != .none, let which = r.token, "\(which.rawValue)_token" != hint { return .revoked }
        switch r.style {
        case .none: return .unsupported
        case .request:
            try described(client, token: token, hint: hint)
            return .revoked
        case .rfc7009: break
        }
        let meta = try metadata.metadata(for: client, now: clock.now())
        guard let endpoint = meta.revocationEndpoint else { return .unsupported }
        let (reply, context) = try call(client, endpoint, .revocation, [("token", token), ("token_type_hint", hint)])
        if reply.status == 200 { return .revoked }
        if reply.status >= 500 || reply.status == 429 {
            throw .transient(reason: "revocation endpoint: HTTP \(reply.status)", retryAfter: reply.retryAfter)
        }
        // An RFC 6749 §5.2 error, kept as it came.
        _ = try told(context) { () throws(TokenEndpointError) in try TokenResponse.parse(reply, endpoint: "revocation endpoint") }
        throw .invalidResponse("revocation endpoint: HTTP \(reply.status)")
    }

    public func revocationSupported(client: ClientRegistration) throws(TokenEndpointError) -> Bool {
        switch client.descriptor.revocation.style {
        case .none: return false
        case .request: return true
        case .rfc7009: return try metadata.metadata(for: client, now: clock.now()).revocationEndpoint != nil
        }
    }

    /// The RP-Initiated Logout URL for the user's browser (no request is made here); nil when
    /// the issuer advertises no end_session_endpoint.
    public func endSessionURL(client: ClientRegistration, idTokenHint: String?, postLogoutRedirectURI: String?, state: String)
        throws(TokenEndpointError) -> String? {
        let meta = try metadata.metadata(for: client, now: clock.now())
        guard let endpoint = meta.endSessionEndpoint else { return nil }
        var query = [("client_id", client.clientID), ("state", state)]
        if let idTokenHint { query.insert(("id_token_hint", idTokenHint), at: 0) }
        if let postLogoutRedirectURI { query.append(("post_logout_redirect_uri", postLogoutRedirectURI)) }
        let s = endpoint.absoluteString
        return s + (s.contains("?") ? "&" : "?") + FormEncoding.body(query)
    }

    /// POSTs a form to one of the client's authorization server endpoints (`kind`) with the
    /// client's authentication and, with `dpop`, a proof carrying the client's current nonce at
    /// that server (`ServerNonces`: one for all its endpoints and replicas). Every answer's
    /// `DPoP-Nonce` is learned. A proof refusal is sent once more when the broker now holds
    /// another nonce (`DPoPNonceRetry`, RFC 9449 §8): the server refused before looking at the
    /// grant. The answer comes with what the request carried, for a refusal's report.
    func call(_ client: ClientRegistration, _ endpoint: URL, _ kind: IdPEndpoint, _ fields: [(String, String)], timeout: TimeInterval? = nil,
              once: Bool = false, dpop: DPoPProof? = nil) throws(TokenEndpointError) -> (reply: BlockingHTTP.Reply, context: RefusalContext) {
        guard let dpop else {
            let reply = try post(client, endpoint, fields, timeout: timeout, once: once, proof: nil)
            if let n = reply.dpopNonce { nonces.learn(n, from: kind, client: client, now: clock.now()) }
            return (reply, RefusalContext(endpoint: kind, proof: false, nonceFrom: nil).presenting(client))
        }
        let target = endpoint.absoluteString
        func send(_ nonce: ServerNonce?) throws(TokenEndpointError) -> BlockingHTTP.Reply {
            // A proof the cryptography library fails to sign is a request never sent.
            let proof: String
            do { proof = try dpop.make(htm: "POST", htu: target, at: clock.now(), nonce: nonce?.value) } catch {
                throw .notSent("the DPoP proof could not be signed (\((error as? CryptoFailure)?.operation ?? "encoding"))")
            }
            let reply = try post(client, endpoint, fields, timeout: timeout, once: once, proof: proof)
            if let n = reply.dpopNonce { nonces.learn(n, from: kind, client: client, now: clock.now()) }
            return reply
        }
        let sent = nonces.current(for: client)
        let reply = try send(sent)
        let held = nonces.current(for: client)
        // A body that is not JSON carries no error code: it is returned, and its caller says what it is.
        let error = (try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any])?["error"] as? String
        guard DPoPNonceRetry.resend(status: reply.status, error: error, sent: sent?.value, held: held?.value, resent: false) != nil else {
            return (reply, RefusalContext(endpoint: kind, proof: true, nonceFrom: sent?.learnedFrom).presenting(client))
        }
        return (try send(held), RefusalContext(endpoint: kind, proof: true, nonceFrom: held?.learnedFrom, resent: true).presenting(client))
    }

    /// Runs `body` (reading an answer); a refusal it raises names `context`: the endpoint, and
    /// whether a proof and a nonce were sent.
    func told<T>(_ context: RefusalContext, _ body: () throws(TokenEndpointError) -> T) throws(TokenEndpointError) -> T {
        do { return try body() } catch {
            switch error {
            case .oauth(var o):
                o.context = context
                throw .oauth(o)
            case .refused(let status, let reason): throw .refused(status: status, reason: reason + " " + context.summary)
            default: throw error
            }
        }
    }

    /// One POST of the form with the client's authentication; transport failures become TokenEndpointError.
    private func post(_ client: ClientRegistration, _ endpoint: URL, _ fields: [(String, String)], timeout: TimeInterval?,
                      once: Bool, proof: String?) throws(TokenEndpointError) -> BlockingHTTP.Reply {
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        if let proof { headers.append("DPoP: " + proof) }
        headers += client.descriptor.headerLines
        var form = fields
        switch client.authMethod {
        case .none:
            form.append(("client_id", client.clientID))
        case .clientSecretBasic:
            let s = try clientSecret(client)
            let pair = FormEncoding.encode(client.clientID) + ":" + FormEncoding.encode(s)
            headers.append("Authorization: Basic " + Data(pair.utf8).base64EncodedString())
        case .clientSecretPost:
            form += [("client_id", client.clientID), ("client_secret", try clientSecret(client))]
        case .tlsClientAuth, .selfSignedTLSClientAuth:
            // RFC 8705 §2: the client is authenticated by its certificate (`trust(for:)`);
            // `client_id` identifies it, with no secret and no assertion.
            form.append(("client_id", client.clientID))
        case .privateKeyJWT:
            guard let assertions else { throw .metadata("no key to sign client assertions") }
            let jwt: String
            do { jwt = try assertions.assertion(for: client, audience: client.assertionAudience(endpoint: endpoint.absoluteString), now: clock.now()) } catch {
                throw .metadata("client assertion key unavailable")
            }
            form += [("client_id", client.clientID),
                     ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"), ("client_assertion", jwt)]
        }
        // The body as the provider takes it: a form (RFC 6749), or a JSON object of the same members.
        let json = client.descriptor.tokenRequest.encoding == .json
        if json { headers[0] = "Content-Type: application/json" }
        let body = Array((json ? ProviderDescriptor.canonical(Dictionary(form, uniquingKeysWith: { a, _ in a })) : FormEncoding.body(form)).utf8)
        let trust = try trust(for: client)
        do {
            return try http.send("POST", endpoint, headers: headers, body: body, timeout: timeout, once: once,
                                 trust: trust)
        } catch {
            switch error {
            case .notSent(let why): throw .notSent("\(endpoint.path): \(why)")
            case .certificateRefused(let why): throw .certificateRefused("\(endpoint.path): \(why)")
            case .unanswered(let why): throw .unanswered("\(endpoint.path): \(why)")
            case .tooLarge: throw .invalidResponse("\(endpoint.path): response too large")
            }
        }
    }

    /// Whom a connection to the client's provider trusts, and, for a client authenticating with
    /// mutual TLS (RFC 8705 §2), the certificate it presents: on every call to the provider.
    func trust(for client: ClientRegistration) throws(TokenEndpointError) -> ProviderTrust {
        guard client.authMethod.needsCertificate else { return ProviderTrust(anchorsPEM: client.trustAnchors) }
        let credential: ClientTLSCredential?
        do { credential = try certificate(client) } catch { throw .metadata("client certificate unavailable") }
        guard let credential else { throw .metadata("client has no TLS client certificate (tls_client_certificate)") }
        return ProviderTrust(anchorsPEM: client.trustAnchors, clientCertificate: credential)
    }

    func clientSecret(_ client: ClientRegistration) throws(TokenEndpointError) -> String {
        let s: String?
        do { s = try secret(client) } catch { throw .metadata("client secret unavailable") }
        guard let s else { throw .metadata("client has no secret") }
        return s
    }
}

extension RefusalContext {
    /// The context naming the client certificate the request presented, for a client that
    /// authenticates with one: a refusal then says which certificate the provider turned down.
    func presenting(_ client: ClientRegistration) -> RefusalContext {
        var c = self
        c.certificate = client.authMethod.needsCertificate ? client.tlsClientCertificate?.thumbprint : nil
        return c
    }
}
