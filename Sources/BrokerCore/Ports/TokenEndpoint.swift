import Foundation

/// TokenEndpoint talks to a client's IdP: its token and revocation endpoints, with the client's
/// authentication (one code path for every call). Calls block the calling thread; services call
/// them from worker threads only.
public protocol TokenEndpoint: Sendable {
    /// Spends `refreshToken` once (RFC 6749 §6). Never retried inside, not even by the HTTP
    /// library on a connection found dead: a retry is a new decision of the refresh machine. Waits
    /// for the answer as long as the connection lives, at most `patience`; failures say whether
    /// the request may have reached the IdP (`unanswered`) or provably did not (`notSent`).
    func refresh(client: ClientRegistration, refreshToken: String, patience: TimeInterval) throws(TokenEndpointError) -> TokenGrant

    /// Asks the IdP whether `token` is active (RFC 7662 §2); nil when the issuer offers no
    /// introspection endpoint.
    func introspect(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> Bool?

    /// Pushes an authorization request with the client's authentication (RFC 9126 §2): the
    /// `request_uri` the authorization URL then carries, and how many seconds it stays valid.
    func pushAuthorizationRequest(client: ClientRegistration, parameters: [(String, String)]) throws(TokenEndpointError)
        -> (requestURI: String, expiresIn: Int)

    /// Exchanges an authorization code with its PKCE verifier (RFC 6749 §4.1.3, RFC 7636 §4.5).
    func exchangeCode(client: ClientRegistration, code: String, verifier: String) throws(TokenEndpointError) -> TokenGrant

    /// Revokes a token (RFC 7009 §2.1); `hint` is `refresh_token` or `access_token`.
    func revoke(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError)

    /// The URL the user's browser must be sent to so that the IdP ends the user's session
    /// (OpenID Connect RP-Initiated Logout 1.0 §2): `id_token_hint`, `client_id`,
    /// `post_logout_redirect_uri` and `state` on the issuer's end_session_endpoint; nil when it
    /// advertises none. The logout is the browser's (the IdP asks the user, with its cookies):
    /// a server-side request could not do it. It does not revoke refresh tokens (spec §8).
    func endSessionURL(client: ClientRegistration, idTokenHint: String?, postLogoutRedirectURI: String?, state: String)
        throws(TokenEndpointError) -> String?
}
