/// The events a tenant's webhook endpoints subscribe to.
public enum WebhookEventType: String, Sendable, CaseIterable, Codable {
    /// The IdP refused the grant: the user must sign in again.
    case needsReauth = "session.needs_reauth"
    /// An admin, a sign-out, back-channel logout or the IdP ended the session.
    case revoked = "session.revoked"
    /// The session reaches its IdP's absolute grant lifetime within a day (once per grant).
    case grantExpiring = "session.grant_expiring"
    /// A session given up as needs_reauth (a refresh outcome lost) is active again.
    case recovered = "session.recovered"
    /// A client's TLS certificate (RFC 8705) ends within 30, 7 or 1 days (once per certificate
    /// and threshold, CertificateExpiryNotice).
    case certificateExpiring = "client.certificate_expiring"
    /// A bulk sign-out job finished.
    case signoutFinished = "signout.finished"

    /// The event a session's state change is, if any: the one decision the stores apply in the
    /// transaction that writes the change.
    public static func of(from before: SessionState, to after: SessionState) -> WebhookEventType? {
        switch (before, after) {
        case (.active, .needsReauth): .needsReauth
        case (.active, .revoked), (.needsReauth, .revoked): .revoked
        case (.needsReauth, .active): .recovered
        default: nil
        }
    }
}
