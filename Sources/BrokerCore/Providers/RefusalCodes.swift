/// RefusalCodes say how a provider's token-endpoint refusals (RFC 6749 §5.2 codes, or the
/// provider's own) are read when a refresh is refused: codes that refuse the client itself, and
/// codes that are retried with backoff and reported rather than ending the session. Any other
/// code ends the grant (the session needs a new sign-in), as `invalid_grant` does. By default
/// `invalid_request` is retried: providers answer it both for a failed client authentication
/// and for an unknown refresh token, and ending a session cannot be undone.
public struct RefusalCodes: Sendable, Equatable {
    public var clientRefused: Set<String> = ["invalid_client", "unauthorized_client"]
    public var retried: Set<String> = ["invalid_request"]

    public init() {}
}
