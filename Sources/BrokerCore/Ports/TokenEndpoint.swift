/// TokenEndpoint talks to a client's IdP token endpoint. Calls block the calling thread; the
/// token service calls them from its worker threads only.
public protocol TokenEndpoint: Sendable {
    /// Spends `refreshToken` once (RFC 6749 §6). Never retried inside: a retry is a new decision
    /// made under the refresh lock.
    func refresh(client: ClientRegistration, refreshToken: String) throws(TokenEndpointError) -> TokenGrant
}
