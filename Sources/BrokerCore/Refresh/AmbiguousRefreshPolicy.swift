/// AmbiguousRefreshPolicy says what becomes of a session whose refresh may or may not have
/// reached the IdP when the issuer offers no RFC 7662 introspection to tell.
public enum AmbiguousRefreshPolicy: String, Sendable, Equatable, Codable, CaseIterable {
    /// The session needs a new sign-in (`needs_reauth`, reason `refresh_outcome_lost`): right
    /// for IdPs like XID that rotate with no grace period, where presenting the token again
    /// would revoke the whole family.
    case failClosed = "fail_closed"
    /// Present the refresh token again: only for IdPs with a reuse grace window.
    case retry
}
