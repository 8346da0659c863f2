/// SessionState is where a session is in its life.
public enum SessionState: String, Sendable, Codable {
    /// Tokens are held and refreshed.
    case active
    /// The IdP refused the refresh token (invalid_grant or 403 access_denied): the user must
    /// sign in again. Terminal for the refresh engine.
    case needsReauth = "needs_reauth"
    /// Ended by an admin, a sign-out job or back-channel logout; token material erased.
    case revoked
}
