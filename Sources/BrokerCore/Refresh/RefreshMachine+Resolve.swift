import Foundation

extension RefreshMachine {
    /// Resolves `attempt`, whose outcome never arrived, from `evidence` — never by presenting
    /// the token to find out. Called by the attempt's owner as soon as it knows its
    /// request is over, or by anyone once the owner's patience has run out.
    public static func resolve(_ row: Session, attempt: RefreshAttempt, evidence: AttemptEvidence,
                               _ ctx: RefreshContext) -> RefreshFinish {
        guard row.attempt?.id == attempt.id, row.state == .active else {
            // Somebody resolved it first, or the session ended meanwhile.
            return RefreshFinish(result: row.state == .active ? .failure(.refreshBusy) : .failure(.sessionNotActive(row.state)))
        }
        switch evidence {
        case .active:
            return retried(row, "introspection: the refresh token is still active; the IdP did not act")
        case .noIntrospection where ctx.onAmbiguous == .retry:
            return retried(row, "no introspection; on_ambiguous_refresh is retry")
        case .inactive, .noIntrospection:
            // The attempt stays recorded: should its answer turn up after all (written late by
            // its owner), it still applies.
            var s = row.ended(.needsReauth, reason: "refresh_outcome_lost", lastError: "the refresh's outcome was lost")
            s.attempt = attempt
            let why = evidence == .inactive ? "introspection says the refresh token is no longer active"
                                            : "no introspection and on_ambiguous_refresh is fail_closed"
            return RefreshFinish(write: s, result: .failure(.sessionNotActive(.needsReauth)),
                                 event: RefreshEvent(.error, "refresh_outcome_lost", "a refresh's answer was lost (\(why)); the user must sign in again"))
        case .unknown(let why):
            var s = backingOff(row, ctx, retryAfter: nil, "attempt unresolved: \(why)")
            s.attempt = attempt
            return RefreshFinish(write: s, result: .failure(.idpUnavailable(retryAfter: seconds(s.backoffUntil!, ctx.now))),
                                 event: RefreshEvent(.warn, "attempt_unresolved", "a lost refresh could not be resolved yet (\(why)); trying again later"))
        }
    }

    /// After a change of database server, introspection said the refresh token of `attempt`,
    /// recorded and not presented, is no longer active: the IdP rotated it and the new server
    /// lacks the rotation (its replica died with the old primary). Presenting it would be a
    /// replay; the session needs a new sign-in, and the attempt is cleared (nothing was sent).
    public static func superseded(_ row: Session, attempt: RefreshAttempt) -> RefreshFinish {
        guard row.attempt?.id == attempt.id, row.state == .active else {
            return RefreshFinish(result: row.state == .active ? .failure(.refreshBusy) : .failure(.sessionNotActive(row.state)))
        }
        var s = row.ended(.needsReauth, reason: "refresh_token_superseded",
                          lastError: "after a change of database server the stored refresh token was no longer active")
        s.attempt = nil
        return RefreshFinish(write: s, result: .failure(.sessionNotActive(.needsReauth)),
                             event: RefreshEvent(.error, "refresh_token_superseded",
                                 "after a change of database server, introspection says the session's refresh token is no longer active (a rotation was lost with the old primary); it was not presented; the user must sign in again"))
    }

    /// The attempt did not reach the IdP: clear it and make the session due at once.
    static func retried(_ row: Session, _ why: String) -> RefreshFinish {
        var s = row
        s.version += 1
        s.attempt = nil
        s.nextRefreshAt = row.attempt?.startedAt ?? s.nextRefreshAt
        return RefreshFinish(write: s, result: .failure(.refreshBusy), next: .again,
                             event: RefreshEvent(.info, "attempt_resolved_retry", why))
    }
}
