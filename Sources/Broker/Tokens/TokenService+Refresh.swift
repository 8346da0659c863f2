import Foundation
import BrokerCore

extension TokenService {
    /// Why a flight runs: a caller needs a token (wait for the lock, compare versions), or the
    /// session's timer fired (only try the lock; follow the stored schedule).
    enum FlightMode {
        case demand(seenVersion: Int64, need: TokenRequirement)
        case due
    }

    /// One refresh flight, run by its leader on a worker thread: take the session's
    /// cross-replica lock, re-read, and spend the refresh token only if the decision under the
    /// lock says so. Returns the flight's result and the row as written, if it was.
    func refreshLocked(_ key: SessionKey, mode: FlightMode, actor: String) -> (FlightResult, written: Session?) {
        var outcome: (FlightResult, written: Session?)
        let timeout: TimeInterval
        if case .due = mode { timeout = 0 } else { timeout = lockTimeout }
        do {
            outcome = try store.withRefreshLock(tenant: key.tenant, id: key.id, timeout: timeout) { locked in
                let now = clock.now()
                let decision: TokenDecision
                switch mode {
                case .demand(let seen, let need):
                    decision = TokenDecision.decideLocked(locked, need, seenVersion: seen, now: now)
                case .due:
                    switch DueDecision.decide(locked, now: now) {
                    case .refresh: decision = .refresh
                    case .reschedule: decision = .serve
                    case .drop: decision = .reject(.sessionNotActive(locked.state == .active ? .needsReauth : locked.state))
                    }
                }
                switch decision {
                case .serve:
                    metrics.refreshes.add("skipped")
                    return (nil, (.success((locked, false)), nil))
                case .reject(.sessionNotActive(.needsReauth)) where locked.state == .active && locked.refreshToken == nil:
                    var s = locked
                    s.version += 1
                    s.state = .needsReauth
                    s.lastError = "no refresh token"
                    s.nextRefreshAt = nil
                    return (s, (.failure(.sessionNotActive(.needsReauth)), s))
                case .reject(let e):
                    return (nil, (.failure(e), nil))
                case .refresh:
                    guard let client = try registry.client(tenant: key.tenant, id: locked.client, now: now) else {
                        return (nil, (.failure(.notFound("client")), nil))
                    }
                    let (write, result) = spend(locked, client: client)
                    return (write, (result, write))
                }
            }
        } catch {
            let e = Self.brokerError(error)
            if e == .refreshBusy { metrics.lockContention.add() }
            outcome = (.failure(e), nil)
        }
        afterFlight(key, outcome.0, actor: actor)
        return outcome
    }

    /// Calls the IdP with the locked row's refresh token and says what to write.
    private func spend(_ locked: Session, client: ClientRegistration) -> (write: Session, result: FlightResult) {
        let started = clock.now()
        let grant: TokenGrant
        do {
            grant = try endpoint.refresh(client: client, refreshToken: locked.refreshToken ?? "")
        } catch {
            let now = clock.now()
            metrics.refreshLatency.observe(now.timeIntervalSince(started))
            var s = locked
            s.version += 1
            s.failureCount += 1
            if error.isTerminal {
                metrics.refreshes.add("needs_reauth")
                s.state = .needsReauth
                s.nextRefreshAt = nil
                if case .oauth(let o) = error { s.lastError = "\(o.error) (HTTP \(o.status))" }
                return (s, .failure(.sessionNotActive(.needsReauth)))
            }
            metrics.refreshes.add("failed")
            var retryAfter: Int?
            switch error {
            case .transient(let reason, let after):
                s.lastError = reason
                retryAfter = after
            case .oauth(let o):
                s.lastError = "\(o.error) (HTTP \(o.status))"
            case .invalidResponse(let reason), .metadata(let reason):
                s.lastError = reason
            }
            // Try again later with backoff; the engine follows this schedule on every replica.
            s.nextRefreshAt = retry.nextAttempt(after: s.failureCount, retryAfter: retryAfter, now: now, draw: (jitter() + 1) / 2)
            return (s, .failure(.idpUnavailable(retryAfter: retryAfter)))
        }
        let finished = clock.now()
        metrics.refreshLatency.observe(finished.timeIntervalSince(started))
        if let refused = checkRefreshedIDToken(grant, locked, client: client, now: finished) { return refused }
        metrics.refreshes.add("ok")
        let s = Self.apply(grant, to: locked, policy: client.refreshPolicy, now: finished, jitter: jitter())
        return (s, .success((s, true)))
    }

    /// A refreshed ID token must come from the same issuer, for the same subject and client
    /// (OIDC Core §12.2; no nonce). When it does not, nothing of the answer is kept or handed
    /// out and the session needs a new sign-in. When the issuer's keys cannot be fetched, the
    /// rotated refresh token is kept (the grant must not be lost) but not the access token,
    /// and the refresh is retried later. Nil: the answer may be used.
    private func checkRefreshedIDToken(_ grant: TokenGrant, _ locked: Session, client: ClientRegistration, now: Date) -> (write: Session, result: FlightResult)? {
        guard let token = grant.idToken, let idTokens else { return nil }
        let expect = IDTokenExpectation(issuer: locked.issuer, clientID: client.clientID, nonce: nil, subject: locked.subject)
        do {
            _ = try idTokens.verify(token, expect, now: now)
            return nil
        } catch {
            var s = locked
            s.version += 1
            s.failureCount += 1
            s.accessToken = nil
            s.accessExpiresAt = nil
            switch error {
            case .rejected(let why):
                metrics.refreshes.add("needs_reauth")
                s.refreshToken = nil
                s.idToken = nil
                s.state = .needsReauth
                s.nextRefreshAt = nil
                s.lastError = "refreshed ID token rejected: \(why.reason)"
                return (s, .failure(.sessionNotActive(.needsReauth)))
            case .keysUnavailable:
                metrics.refreshes.add("failed")
                s.refreshToken = grant.refreshToken ?? locked.refreshToken
                s.lastError = "refreshed ID token: issuer keys unavailable"
                s.nextRefreshAt = retry.nextAttempt(after: s.failureCount, retryAfter: nil, now: now, draw: (jitter() + 1) / 2)
                return (s, .failure(.idpUnavailable(retryAfter: nil)))
            }
        }
    }

    /// The session after a successful refresh (spec §8: keep the old refresh token when no new
    /// one came; a missing expires_in is taken as 300 s, the safe side of unknown).
    static func apply(_ grant: TokenGrant, to old: Session, policy: RefreshPolicy, now: Date, jitter: Double) -> Session {
        var s = old
        s.version = old.version + 1
        let lifetime = grant.expiresIn ?? 300
        let expires = now.addingTimeInterval(lifetime)
        s.accessToken = grant.accessToken
        s.accessExpiresAt = expires
        s.accessLifetime = lifetime
        s.refreshToken = grant.refreshToken ?? old.refreshToken
        s.scopes = grant.scope ?? old.scopes
        s.idToken = grant.idToken ?? old.idToken
        s.failureCount = 0
        s.lastError = nil
        s.lastRefreshedAt = now
        s.nextRefreshAt = policy.nextRefresh(issuedAt: now, expiresAt: expires, jitter: jitter)
        return s
    }

    /// Keeps this replica's cache current and tells other replicas what to forget (the new
    /// schedule was announced by the store with the write).
    private func afterFlight(_ key: SessionKey, _ result: FlightResult, actor: String) {
        let now = clock.now()
        switch result {
        case .success(let (s, refreshed)):
            cache.put(s, now: now)
            // A routine refresh is recorded on the row (version, last_refreshed_at) and in the
            // metrics; the audit trail keeps what someone must look at: failures, needs_reauth,
            // and refreshes a caller forced.
            if refreshed && actor != "engine" {
                audit.record(AuditEvent(at: now, actor: actor, action: "session.refresh", tenant: key.tenant, session: key.id, outcome: "ok"))
            }
        case .failure(.sessionNotActive(let state)):
            cache.remove(key)
            feed.publish(.session(tenant: key.tenant, id: key.id))
            audit.record(AuditEvent(at: now, actor: actor, action: "session.refresh", tenant: key.tenant, session: key.id, outcome: state.rawValue))
        case .failure(let e):
            cache.remove(key)
            if e != .refreshBusy {
                audit.record(AuditEvent(at: now, actor: actor, action: "session.refresh", tenant: key.tenant, session: key.id, outcome: e.code))
            }
        }
    }

    /// The token handed out for a session that passed the decision.
    func issue(_ s: Session, now: Date) -> IssuedToken {
        let exp = s.accessExpiresAt ?? now
        return IssuedToken(accessToken: s.accessToken ?? "", tokenType: "Bearer", expiresAt: exp,
                           expiresIn: max(0, Int(exp.timeIntervalSince(now))), scope: s.scopes,
                           sessionID: s.id, subject: s.subject)
    }

    /// Audits the hand-out or refusal, counts it, and passes the result through.
    @discardableResult
    func finish(_ r: Result<IssuedToken, BrokerError>, _ principal: Principal, _ tenant: String, _ session: String?,
                _ now: Date, refreshed: Bool = false) -> Result<IssuedToken, BrokerError> {
        let outcome: String
        switch r {
        case .success:
            outcome = refreshed ? "refreshed" : "cached"
            if let session { usage.record(SessionKey(tenant: tenant, id: session), at: now) }
        case .failure(let e):
            outcome = e.code
        }
        if outcome == "cached" { metrics.cachedHandOuts.add() } else { metrics.tokenRequests.add(outcome) }
        audit.record(AuditEvent(at: now, actor: principal.id, action: "token.issue", tenant: tenant, session: session, outcome: outcome))
        return r
    }

    static func brokerError(_ error: any Error) -> BrokerError {
        (error as? BrokerError) ?? .internalError
    }
}
