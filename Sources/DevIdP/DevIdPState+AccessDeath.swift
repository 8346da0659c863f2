import Foundation

extension DevIdPState {
    /// Why access token `at` is dead at `now`, or nil while it lives: `expired`; `revoked` (RFC
    /// 7009, the token itself, or its grant: §2.1 has revoking a refresh token invalidate the
    /// access tokens of the same grant); `killed` (`POST /admin/resource/kill`); `rotated` (a
    /// rotation killed it, `kill_old_access_tokens`). Introspection and the protected resource
    /// both ask this, so that they never disagree.
    func death(of at: IssuedAccessToken, at now: Date) -> String? {
        if at.expires <= now { return "expired" }
        if at.revoked { return "revoked" }
        if at.killed { return "killed" }
        guard let f = at.family else { return nil }
        guard let family = families[f], !family.revoked else { return "revoked" }
        return at.number < family.accessValidFrom ? "rotated" : nil
    }
}
