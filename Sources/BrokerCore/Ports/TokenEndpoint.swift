/// TokenEndpoint talks to a client's IdP: its token and revocation endpoints, with the client's
/// authentication (one code path for every call). Calls block the calling thread; services call
/// them from worker threads only.
public protocol TokenEndpoint: Sendable {
    /// Spends `refreshToken` once (RFC 6749 §6). Never retried inside: a retry is a new decision
    /// made under the refresh lock.
    func refresh(client: ClientRegistration, refreshToken: String) throws(TokenEndpointError) -> TokenGrant

    /// Exchanges an authorization code with its PKCE verifier (RFC 6749 §4.1.3, RFC 7636 §4.5).
    func exchangeCode(client: ClientRegistration, code: String, verifier: String) throws(TokenEndpointError) -> TokenGrant

    /// Revokes a token (RFC 7009 §2.1); `hint` is `refresh_token` or `access_token`.
    func revoke(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError)

    /// Ends the user's session at the IdP (OpenID Connect RP-Initiated Logout 1.0 §2) with the
    /// ID token as hint. It does not revoke refresh tokens (spec §8): revocation does.
    func endSession(client: ClientRegistration, idTokenHint: String) throws(TokenEndpointError)
}
