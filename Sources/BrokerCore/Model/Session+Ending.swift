extension Session {
    /// The session ended in `state` (needs_reauth or revoked): the next version, its token
    /// material erased, never scheduled again. The ID token is kept only when `keepIDToken`
    /// (an end_session hint may still need it).
    public func ended(_ state: SessionState, reason: String?, lastError: String?, keepIDToken: Bool = true) -> Session {
        var s = self
        s.version += 1
        s.state = state
        s.reason = reason
        s.lastError = lastError
        s.accessToken = nil
        s.accessExpiresAt = nil
        s.refreshToken = nil
        if !keepIDToken { s.idToken = nil }
        s.nextRefreshAt = nil
        s.backoffUntil = nil
        return s
    }
}
