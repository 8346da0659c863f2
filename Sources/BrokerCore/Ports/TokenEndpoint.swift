import Foundation

/// TokenEndpoint talks to a client's IdP: its token and revocation endpoints, with the client's
/// authentication (one code path for every call). Calls block the calling thread; services call
/// them from worker threads only.
public protocol TokenEndpoint: Sendable {
    /// Spends `refreshToken` once (RFC 6749 §6). Never retried inside, not even by the HTTP
    /// library on a connection found dead: a retry is a new decision of the refresh machine. Waits
    /// for the answer as long as the connection lives, at most `patience`; failures say whether
    /// the request may have reached the IdP (`unanswered`) or provably did not (`notSent`).
    /// With `dpop` every request carries a proof made with the session's key (RFC 9449 §5) and
    /// the client's current nonce at its authorization server; an IdP that refuses the proof
    /// (`use_dpop_nonce`, or `invalid_dpop_proof` while the broker now holds another nonce, §8)
    /// processed nothing, so the request is made once more with the new nonce
    /// (`DPoPNonceRetry`) — the only case where the token is sent twice, and then it was not
    /// accepted the first time.
    func refresh(client: ClientRegistration, refreshToken: String, patience: TimeInterval, dpop: DPoPProof?) throws(TokenEndpointError)
        -> TokenGrant

    /// The client-credentials grant (RFC 6749 §4.4) with the client's own authentication:
    /// the ask's `scope`, RFC 8707 `resource` and `audience` when given, a DPoP proof of `dpop`
    /// when given (a proof refusal answered once more with a new nonce, as for `refresh`). The answer is read as a refresh's (the descriptor's response shape). Nothing
    /// is spent: a repeat is harmless, only wasteful.
    func clientCredentials(client: ClientRegistration, ask: AppTokenAsk, dpop: DPoPProof?) throws(TokenEndpointError) -> TokenGrant

    /// Asks the IdP whether `token` is active (RFC 7662 §2); nil when the issuer offers no
    /// introspection endpoint.
    func introspect(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> Bool?

    /// Pushes an authorization request with the client's authentication (RFC 9126 §2): the
    /// `request_uri` the authorization URL then carries, and how many seconds it stays valid.
    /// With `dpop` the push carries a proof of the login's key (RFC 9449 §10.1).
    func pushAuthorizationRequest(client: ClientRegistration, parameters: [(String, String)], dpop: DPoPProof?) throws(TokenEndpointError)
        -> (requestURI: String, expiresIn: Int)

    /// Exchanges an authorization code with its PKCE verifier (RFC 6749 §4.1.3, RFC 7636 §4.5),
    /// with a DPoP proof when given (as for `refresh`).
    func exchangeCode(client: ClientRegistration, code: String, verifier: String, dpop: DPoPProof?) throws(TokenEndpointError) -> TokenGrant

    /// Exchanges the session's access token for a narrower one (RFC 8693 §2.1), with the client's
    /// authentication, an actor token when given (§4.1), and a DPoP proof of the session's key
    /// for a bound session. Nothing of the session changes, whatever the answer.
    func exchange(client: ClientRegistration, subjectToken: String, _ ask: TokenExchange, actorToken: String?, dpop: DPoPProof?)
        throws(TokenEndpointError) -> ExchangedToken

    /// The user's id at the provider, from its "who am I" call with `accessToken` (the client's
    /// provider descriptor says which call and where the id is in its answer).
    func userID(client: ClientRegistration, accessToken: String) throws(TokenEndpointError) -> String

    /// Revokes a token (RFC 7009 §2.1, or the provider's own request its descriptor describes);
    /// `hint` is `refresh_token` or `access_token`. `.unsupported` when the provider offers no
    /// revocation (no revocation endpoint in its metadata, or a descriptor that says none):
    /// nothing is sent.
    @discardableResult
    func revoke(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> IdPRevocation

    /// Whether the client's provider offers revocation (its descriptor's request, or a
    /// `revocation_endpoint` in its metadata); reads the metadata, calls nothing else.
    func revocationSupported(client: ClientRegistration) throws(TokenEndpointError) -> Bool

    /// The URL the user's browser must be sent to so that the IdP ends the user's session
    /// (OpenID Connect RP-Initiated Logout 1.0 §2): `id_token_hint`, `client_id`,
    /// `post_logout_redirect_uri` and `state` on the issuer's end_session_endpoint; nil when it
    /// advertises none. The logout is the browser's (the IdP asks the user, with its cookies):
    /// a server-side request could not do it. It does not revoke refresh tokens.
    func endSessionURL(client: ClientRegistration, idTokenHint: String?, postLogoutRedirectURI: String?, state: String)
        throws(TokenEndpointError) -> String?
}
