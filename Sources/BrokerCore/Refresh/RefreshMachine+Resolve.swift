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
