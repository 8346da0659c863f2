import Foundation

extension RefreshMachine {
    /// Decides what the outcome of `attempt` (sent at `sentAt`, presenting `presented`) means
    /// for the row re-read under the lock. The answer of attempt X applies to a row still
    /// recording X — one where nobody else could have presented the token since — and to a row
    /// that lost X's record but still holds the very token X presented, records no other
    /// attempt, and where the answer carries a new refresh token: after a failover to a server
    /// that lacks the write recording X, nobody else presented it either (a start writes its
    /// attempt first), and the token received may be the grant's only live one. Where the row
    /// records another attempt on that token, the answer is neither written nor revoked: which
    /// of the two the IdP honours is not known here, and revoking may kill the live one.
    public static func finish(_ row: Session, attempt: RefreshAttempt, sentAt: Date, outcome: RefreshOutcome,
                              presented: String? = nil, _ ctx: RefreshContext) -> RefreshFinish {
        guard row.attempt?.id == attempt.id else {
            // Written already: the COMMIT went through and only its acknowledgement was lost.
            if case .granted(let g, _) = outcome, let rt = g.refreshToken, rt == row.refreshToken {
                return RefreshFinish(result: .success(row), health: .ok)
            }
            // The record of the attempt is gone but the row still holds what it presented (a
            // failover to a server that lacks the write): the answer is this session's truth.
            if case .granted(let g, _) = outcome, let presented, presented == row.refreshToken,
               let rt = g.refreshToken, rt != presented {
                guard row.attempt == nil else {
                    return RefreshFinish(result: .failure(row.state == .active ? .refreshBusy : .sessionNotActive(row.state)),
                                         event: RefreshEvent(.error, "refresh_attempt_lost", "the session no longer recorded this attempt and records another on the token presented; the answer is neither written nor revoked"))
                }
                var adopted = row
                adopted.attempt = attempt
                var f = finish(adopted, attempt: attempt, sentAt: sentAt, outcome: outcome, presented: nil, ctx)
                f.event = f.event ?? RefreshEvent(.warn, "refresh_attempt_lost", "the session no longer recorded this attempt but still holds the token presented (the database lost a write); the answer is written")
                return f
            }
            // Not ours any more: the row moved on to another token (or the answer carries none
            // to keep). Keep nothing, lose nothing.
            let revoke = received(outcome)
            return RefreshFinish(revoke: revoke, result: .failure(row.state == .active ? .refreshBusy : .sessionNotActive(row.state)),
                                 event: RefreshEvent(.error, "refresh_orphaned", "the session moved on to another refresh token while this attempt was in flight; "
                                     + (revoke.isEmpty ? "no refresh token came back, nothing is kept" : "the tokens received are revoked")))
        }
        var cleared = row
        cleared.version += 1
        cleared.attempt = nil
        switch row.state {
        case .revoked:
            // Revoked while the call was in flight: what came back is revoked too.
            return RefreshFinish(write: cleared, revoke: received(outcome), result: .failure(.sessionNotActive(.revoked)))
        case .needsReauth:
            // Only a good answer of the very attempt that was given up as lost revives the
            // session; anything else leaves it ended, and what came back is revoked.
            guard row.reason == "refresh_outcome_lost", case .granted(_, .valid) = outcome else {
                return RefreshFinish(write: cleared, revoke: received(outcome), result: .failure(.sessionNotActive(.needsReauth)))
            }
        case .active:
            break
        }
        switch outcome {
        case .granted(let grant, .valid):
            let s = applied(grant, to: cleared, sentAt: sentAt, ctx)
            let revived = row.state == .needsReauth
            return RefreshFinish(write: s, result: .success(s), health: .ok,
                                 event: revived ? RefreshEvent(.warn, "refresh_recovered", "a refresh answer that was written late revived the session") : nil)
        case .granted(let grant, .rejected(let why)):
            var s = row.ended(.needsReauth, reason: "id_token_rejected", lastError: "refreshed ID token rejected: \(why)")
            s.attempt = nil
            s.idToken = nil
            return RefreshFinish(write: s, revoke: [grant.refreshToken ?? row.refreshToken].compactMap { $0 },
                                 result: .failure(.sessionNotActive(.needsReauth)), health: .ok,
                                 event: RefreshEvent(.error, "id_token_rejected", "refreshed ID token rejected (\(why)); the grant is revoked at the IdP"))
        case .granted(let grant, .keysUnavailable):
            var s = backingOff(row, ctx, retryAfter: nil, "refreshed ID token: issuer keys unavailable")
            s.attempt = nil
            s.refreshToken = grant.refreshToken ?? row.refreshToken
            s.accessToken = nil
            s.accessExpiresAt = nil
            return RefreshFinish(write: s, result: .failure(.idpUnavailable(retryAfter: seconds(s.backoffUntil!, ctx.now))),
                                 event: RefreshEvent(.warn, "issuer_keys_unavailable", "refreshed ID token could not be checked; new refresh token kept, retrying"))
        case .failed(let error):
            return failed(row, error, ctx)
        }
    }

    /// The refresh tokens an outcome carries (to revoke when they cannot be kept).
    static func received(_ outcome: RefreshOutcome) -> [String] {
        if case .granted(let g, _) = outcome, let rt = g.refreshToken { return [rt] }
        return []
    }

    /// The session after a good answer: expiry counted from when the request was sent (the
    /// token may have been issued then) and never later than a JWT access token's own `exp`;
    /// the old refresh token kept when none came; the kept members replaced when the
    /// answer has any; the grant's own lifetime, when the provider gives one, shortening the
    /// policy's.
    static func applied(_ grant: TokenGrant, to old: Session, sentAt: Date, _ ctx: RefreshContext) -> Session {
        var s = old
        let expires = grant.expiresAt(sentAt: sentAt, ctx.grant)
        let lifetime = expires == Session.neverExpires ? nil : expires.timeIntervalSince(sentAt)
        s.state = .active
        s.reason = nil
        s.accessToken = grant.accessToken
        s.accessTokenType = grant.tokenType
        s.certificateBinding = ctx.presentsCertificate ? CertificateBinding.thumbprint(ofAccessToken: grant.accessToken) : nil
        s.accessExpiresAt = expires
        s.accessLifetime = lifetime
        s.refreshToken = grant.refreshToken ?? old.refreshToken
        s.scopes = grant.scope ?? old.scopes
        s.idToken = grant.idToken ?? old.idToken
        s.failureCount = 0
        s.lastError = nil
        s.backoffUntil = nil
        s.lastRefreshedAt = ctx.now
        s.grantExpiresAt = grant.grantExpiry(policy: ctx.policy.grantExpiry(grantedAt: old.grantedAt, refreshedAt: ctx.now), sentAt: sentAt)
        s.metadata = grant.metadata ?? old.metadata
        s.nextRefreshAt = expires == Session.neverExpires ? nil
            : ctx.policy.schedule(s, issuedAt: sentAt, expiresAt: expires, now: ctx.now, jitter: ctx.jitter)
        return s
    }

    /// A failed attempt, classified by what it says about the IdP having acted: refusals end the
    /// grant or blame the client, outages back off, ambiguity is resolved with evidence.
    static func failed(_ row: Session, _ error: TokenEndpointError, _ ctx: RefreshContext) -> RefreshFinish {
        switch RefreshFailure.classify(error, ctx.refusals) {
        case .grantDead(let reason):
            var s = row.ended(.needsReauth, reason: reason, lastError: error.reason)
            s.attempt = nil
            s.failureCount += 1
            return RefreshFinish(write: s, result: .failure(.sessionNotActive(.needsReauth)), health: .ok,
                                 event: RefreshEvent(.warn, "refresh_refused", "the IdP refused the refresh token (\(error.reason)); the user must sign in again"))
        case .clientRejected:
            // The session is not at fault and does not back off: its client's circuit holds its
            // callers (answering idp_client_rejected, not idp_unavailable) and closes as soon as
            // the registration changes, on every replica. Only the timer's next look moves out.
            var s = backingOff(row, ctx, retryAfter: nil, error.reason)
            s.attempt = nil
            s.backoffUntil = nil
            return RefreshFinish(write: s, result: .failure(.idpRejectedClient), health: .refused(.idpRejectedClient),
                                 event: RefreshEvent(.error, "idp_client_rejected", "the IdP rejected the client's authentication (\(error.reason)); fix the client registration"))
        case .dpopRequired:
            var s = backingOff(row, ctx, retryAfter: nil, error.reason)
            s.attempt = nil
            return RefreshFinish(write: s, result: .failure(.idpRejectedClient), health: .failed(retryAfter: nil),
                                 event: RefreshEvent(.error, "idp_requires_dpop", row.dpopKey == nil
                                     ? "the IdP wants DPoP proofs (\(error.reason)) and this session has no DPoP key (it signed in while its client was registered without dpop); the refresh token was not consumed"
                                     : "the IdP refused the session's DPoP proof (\(error.reason)); the refresh token was not consumed"))
        case .certificateRefused(let why):
            var s = backingOff(row, ctx, retryAfter: nil, error.reason)
            s.attempt = nil
            return RefreshFinish(write: s, result: .failure(.idpCertificateRefused(reason: why)), health: .failed(retryAfter: nil),
                                 event: RefreshEvent(.error, "idp_certificate_refused", "the IdP's TLS certificate was refused (\(why)); the refresh token was not sent; fix the client's trust anchors or TOKENBROKER_PROVIDER_CA_FILE"))
        case .retried(let reason):
            var s = backingOff(row, ctx, retryAfter: nil, error.reason)
            s.attempt = nil
            return RefreshFinish(write: s, result: .failure(.idpUnavailable(retryAfter: seconds(s.backoffUntil!, ctx.now))),
                                 health: .failed(retryAfter: nil),
                                 event: RefreshEvent(.error, "refresh_refused_retried", "the IdP refused the refresh (\(reason)) without saying the grant is dead; the session is kept and retried with backoff: check the client's registration, and its descriptor's refusals"))
        case .outage(let retryAfter):
            var s = backingOff(row, ctx, retryAfter: retryAfter, error.reason)
            s.attempt = nil
            return RefreshFinish(write: s, result: .failure(.idpUnavailable(retryAfter: retryAfter ?? seconds(s.backoffUntil!, ctx.now))),
                                 health: .failed(retryAfter: retryAfter),
                                 event: RefreshEvent(.warn, "idp_unavailable", "refresh failed, the IdP did not act (\(error.reason)); backing off"))
        case .ambiguous where ctx.grant.refreshTokens == .reusable:
            // A refresh token that stays valid may be presented again: nothing was lost.
            return retried(row, "the refresh may have reached the IdP and no answer came (\(error.reason)); its refresh token is reusable, so it is retried")
        case .ambiguous:
            return RefreshFinish(result: .failure(.refreshBusy), next: .resolve,
                                 event: RefreshEvent(.warn, "refresh_outcome_unknown", "the refresh may have reached the IdP and no answer came (\(error.reason)); resolving without presenting it again"))
        }
    }
}
