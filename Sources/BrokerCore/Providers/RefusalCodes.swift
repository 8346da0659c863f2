/// RefusalCodes say how a provider's token-endpoint refusals (RFC 6749 §5.2 codes, or the
/// provider's own) are read when a refresh is refused: codes that refuse the client itself, and
/// codes that are retried with backoff and reported rather than ending the session. Any other
/// code ends the grant (the session needs a new sign-in), as `invalid_grant` does. By default
/// `invalid_request` is retried: providers answer it both for a failed client authentication
/// and for an unknown refresh token, and ending a session cannot be undone.
public struct RefusalCodes: Sendable, Equatable {
    public var clientRefused: Set<String> = ["invalid_client", "unauthorized_client"]
    public var retried: Set<String> = ["invalid_request"]
    /// Whether a 403 without an RFC 6749 error body refuses the client rather than the grant.
    /// Set for a client that authenticates by its certificate (RFC 8705 §2): glewlwyd 2.7.5
    /// answers a certificate it does not take for the client (another subject, not listed) with
    /// a bare 403 before it looks at the grant, and ending a session cannot be undone.
    public var bareForbiddenRefusesClient = false

    public init() {}
}
