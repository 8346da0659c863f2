/// RetentionKind names what retention deletes once it is older than its configured age.
public enum RetentionKind: String, CaseIterable, Sendable {
    /// Audit rows, by the last event they count.
    case auditEvents = "audit_events"
    /// Sessions that ended (revoked or needs_reauth), by when they ended — never one whose
    /// revocation the IdP has not confirmed yet.
    case endedSessions = "ended_sessions"
    /// Bulk sign-out jobs that finished, with their items, by when they finished.
    case finishedSignouts = "finished_signouts"
    /// Webhook events, with their deliveries, by when they happened — never one with a
    /// delivery still pending.
    case webhookEvents = "webhook_events"
    /// App tokens not handed out since they expired (or were dropped), by the later of their
    /// expiry and their last use: a token in use is renewed, never deleted.
    case expiredAppTokens = "expired_app_tokens"
}
