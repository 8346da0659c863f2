import Foundation

/// FailoverReapply decides, under the session's lock on the row as the new server has it,
/// whether a write this replica committed before a server change (RotationJournal) is missing
/// there, and what to write. The rules are those of any write: nothing newer is overwritten,
/// an ended session is never revived.
///
/// The new server lacks the committed write when its row
/// - is at an older version (every write bumps it by one, so an older row is one the write was
///   made over, or an ancestor of it), or
/// - still holds the refresh token the committed rotation replaced, whatever its version:
///   writes made on the new server over the rolled-back row (a backoff, an attempt not
///   presented) bump the version past the committed one without ever holding its token.
/// Otherwise it has the write (the same token) or moved on past it (another token, at a
/// version at least as recent), and nothing is written.
///
/// Versions are compared only along one token's line: an active row holding a refresh token
/// that is neither the committed one nor the one its rotation replaced moved on, whatever its
/// version (another replica rotated on the new server: versions there restarted from the
/// rolled-back row and say nothing about order across servers). So does an active row on the
/// committed token that records an attempt other than the committed one: a refresh is in
/// flight on it, and the committed write brings no token it lacks. Nothing is written over
/// either: writing the committed token back would bring back a spent one. (A row still on the
/// replaced token lacks the rotation whatever attempt it records: that attempt presents a
/// spent token, or was abandoned by this replica when the server changed.)
///
/// A missing write is re-applied whole — tokens, schedule, attempt, state — at a version
/// above both (the committed one, so that replicas' caches holding it see the next write as
/// newer, and the row's plus one), over an active row only. Over an ended row (revoked, or
/// ended on the new server) the refresh token the committed write held, which the row never
/// received, is revoked at the IdP instead: a received token is stored or revoked, never dropped.
public enum FailoverReapply {
    public enum Verdict: String, Sendable, Equatable {
        /// The new server has the write.
        case current
        /// The new server lacked it: written again.
        case reapplied
        /// The row moved on past it: nothing to do.
        case movedOn = "moved_on"
        /// The row ended meanwhile: the committed refresh token is revoked.
        case ended
    }

    public struct Decision: Sendable, Equatable {
        public var verdict: Verdict
        public var write: Session?
        public var revoke: [String]

        public init(verdict: Verdict, write: Session?, revoke: [String]) {
            self.verdict = verdict
            self.write = write
            self.revoke = revoke
        }
    }

    /// Whether re-applying `committed` restores a refresh-token rotation (counted as such): a
    /// write that replaced a token with another, not one that ended the session (its token
    /// erased) or kept it.
    public static func isRotation(_ committed: Session, replaced: String?) -> Bool {
        guard let replaced, let rt = committed.refreshToken else { return false }
        return committed.state == .active && rt != replaced
    }

    /// `committed` is the row as this replica committed it; `replaced`, the refresh token its
    /// rotation replaced (nil when it was not a rotation).
    public static func decide(_ row: Session, committed: Session, replaced: String?) -> Decision {
        let onCommitted = row.refreshToken == committed.refreshToken
        let onReplaced = replaced != nil && row.refreshToken == replaced
        let otherAttempt = row.attempt != nil && row.attempt?.id != committed.attempt?.id
        if row.state == .active, !(onCommitted || onReplaced) || (onCommitted && otherAttempt) {
            return Decision(verdict: .movedOn, write: nil, revoke: [])
        }
        let lacks = row.version < committed.version
            || (replaced != nil && row.refreshToken == replaced && row.refreshToken != committed.refreshToken)
        guard lacks else {
            return Decision(verdict: row.refreshToken == committed.refreshToken ? .current : .movedOn, write: nil, revoke: [])
        }
        guard row.state == .active else {
            let lost = committed.refreshToken.flatMap { $0 != row.refreshToken && committed.state == .active ? [$0] : nil } ?? []
            return Decision(verdict: .ended, write: nil, revoke: lost)
        }
        var w = row
        w.scopes = committed.scopes
        w.claims = committed.claims
        w.accessToken = committed.accessToken
        w.accessExpiresAt = committed.accessExpiresAt
        w.accessLifetime = committed.accessLifetime
        w.accessTokenType = committed.accessTokenType
        // The access token's certificate binding goes with it: a bound token re-applied unbound
        // would be handed to workers.
        w.certificateBinding = committed.certificateBinding
        w.refreshToken = committed.refreshToken
        w.idToken = committed.idToken
        w.state = committed.state
        w.reason = committed.reason
        w.nextRefreshAt = committed.nextRefreshAt
        w.failureCount = committed.failureCount
        w.lastError = committed.lastError
        w.lastRefreshedAt = committed.lastRefreshedAt
        w.attempt = committed.attempt
        w.backoffUntil = committed.backoffUntil
        w.grantExpiresAt = committed.grantExpiresAt
        w.metadata = committed.metadata
        w.lastUsedAt = [row.lastUsedAt, committed.lastUsedAt].compactMap { $0 }.max()
        w.version = max(committed.version, row.version + 1)
        return Decision(verdict: .reapplied, write: w, revoke: [])
    }
}
