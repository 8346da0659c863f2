import Foundation

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

    /// What revoking the session sends to the IdP (RFC 7009): its refresh token, and its access
    /// token while it still lives at `now`.
    public func revocableTokens(at now: Date) -> [(token: String, hint: String)] {
        var out: [(token: String, hint: String)] = []
        if let rt = refreshToken { out.append((rt, "refresh_token")) }
        if let at = accessToken, (accessExpiresAt ?? now) > now { out.append((at, "access_token")) }
        return out
    }
}
