import Foundation

/// RefreshMachine is the one place where a refresh is decided. It does no I/O: its
/// steps take the row read under the session's lock and what is known, and return what to write
/// and what callers get; the driver (RefreshDriver, whose loop is RefreshFlight) performs that,
/// for the timer engine and on-demand requests alike.
///
/// A flight is: `start` (under the lock; `.send` records an attempt, committed before the IdP is
/// called) → the IdP call, outside any transaction → `finish` (under the lock again) →, when the
/// outcome is ambiguous, `resolve` with evidence. "Under the lock" means on the row as it is
/// when the step's write commits: the advisory lock, or a compare-and-set over the row as read,
/// which is the same thing when it succeeds (RefreshFlight says which is used when). Guarantees:
/// - A refresh token is presented only by `.send`, and `.send` is never returned while the row
///   records an unresolved attempt: nobody presents it twice, whatever died in between.
/// - An attempt is resolved only by its owner, or by anyone once `patience + margin` has passed
///   since it started — after that its owner has stopped waiting for the IdP.
/// - A refresh token received from the IdP is written to the row or handed back for revocation.
public enum RefreshMachine {
    /// Slack added to the patience before anyone but the owner resolves an attempt: the owner's
    /// HTTP timeout and its final write must be over by then.
    public static let margin: TimeInterval = 5

    /// Decides under the lock, from the re-read row. `attemptID` names the attempt if one is sent.
    public static func start(_ row: Session, _ trigger: RefreshTrigger, _ ctx: RefreshContext, attemptID: String) -> RefreshStart {
        let now = ctx.now
        if let a = row.attempt, row.state == .active {
            let deadline = a.startedAt.addingTimeInterval(ctx.patience + margin)
            if now < deadline { return .wait(until: deadline, .refreshBusy) }
            if let b = row.backoffUntil, b > now { return .wait(until: b, .idpUnavailable(retryAfter: seconds(b, now))) }
            return .resolve(a)
        }
        switch trigger {
        case .demand(let seen, let need):
            switch TokenDecision.decideLocked(row, need, seenVersion: seen, now: now) {
            case .serve: return .serve(row)
            case .reject(.sessionNotActive(.needsReauth)) where row.state == .active && row.refreshToken == nil:
                return .stop(write: row.ended(.needsReauth, reason: "no_refresh_token", lastError: "no refresh token"), .sessionNotActive(.needsReauth))
            case .reject(let e): return .stop(write: nil, e)
            case .refresh: break
            }
        case .due:
            switch DueDecision.decide(row, now: now) {
            case .reschedule: return .serve(row)
            case .drop where row.state == .active:
                return .stop(write: row.ended(.needsReauth, reason: "no_refresh_token", lastError: "no refresh token"), .sessionNotActive(.needsReauth))
            case .drop: return .stop(write: nil, .sessionNotActive(row.state))
            case .refresh: break
            }
            // Nobody has asked for it lately: no refresh ahead of expiry, only the keep-alive.
            let keepalive = ctx.policy.keepalive(row)
            if keepalive > now, ctx.policy.isIdle(row, now: now) {
                var w = row
                w.version += 1
                w.nextRefreshAt = keepalive
                return .rest(write: w)
            }
        }
        if let b = row.backoffUntil, b > now { return .wait(until: b, .idpUnavailable(retryAfter: seconds(b, now))) }
        if let b = ctx.blockedUntil, b > now { return .wait(until: b, ctx.blockedWith ?? .idpUnavailable(retryAfter: seconds(b, now))) }
        guard let token = row.refreshToken else { return .stop(write: nil, .sessionNotActive(.needsReauth)) }
        let attempt = RefreshAttempt(id: attemptID, startedAt: now)
        var w = row
        w.version += 1
        w.attempt = attempt
        // A worker asking is a use: the refresh's schedule (finish) is the proactive one again.
        if case .demand = trigger { w.lastUsedAt = max(row.lastUsedAt ?? now, now) }
        // Nobody's timer need look before the owner's patience has run out: its outcome's write
        // announces the real schedule, and if it never comes the others resolve it then.
        w.nextRefreshAt = now.addingTimeInterval(ctx.patience + margin)
        return .send(write: w, attempt: attempt, refreshToken: token)
    }

    /// Whole seconds from `now` until `t`, at least 1 (a Retry-After value).
    static func seconds(_ t: Date, _ now: Date) -> Int { max(1, Int(t.timeIntervalSince(now).rounded(.up))) }

    /// The row after a transient failure: no IdP call for this session before the backoff ends,
    /// which the timer follows on every replica.
    static func backingOff(_ row: Session, _ ctx: RefreshContext, retryAfter: Int?, _ lastError: String) -> Session {
        var s = row
        s.version += 1
        s.failureCount += 1
        s.lastError = lastError
        let next = ctx.retry.nextAttempt(after: s.failureCount, retryAfter: retryAfter, now: ctx.now, draw: ctx.draw)
        s.backoffUntil = next
        s.nextRefreshAt = next
        return s
    }
}
