import Foundation
import BrokerCore

extension TokenService {
    /// One refresh flight, run by its leader on the executor: take the session's cross-replica
    /// lock, re-read, and spend the refresh token only if nobody refreshed since `seenVersion`.
    func refreshLocked(_ key: SessionKey, seenVersion: Int64, need: TokenRequirement, client: ClientRegistration, actor: String) -> FlightResult {
        let result: FlightResult
        do {
            result = try store.withRefreshLock(tenant: key.tenant, id: key.id, timeout: lockTimeout) { locked in
                let now = clock.now()
                switch TokenDecision.decideLocked(locked, need, seenVersion: seenVersion, now: now) {
                case .serve:
                    metrics.refreshes.add("skipped")
                    return (nil, .success((locked, false)))
                case .reject(.sessionNotActive(.needsReauth)) where locked.state == .active:
                    var s = locked
                    s.version += 1
                    s.state = .needsReauth
                    s.lastError = "no refresh token"
                    s.nextRefreshAt = nil
                    return (s, .failure(.sessionNotActive(.needsReauth)))
                case .reject(let e):
                    return (nil, .failure(e))
                case .refresh:
                    return spend(locked, client: client, now: now)
                }
            }
        } catch {
            if case .refreshBusy = Self.brokerError(error) { metrics.lockContention.add() }
            result = .failure(Self.brokerError(error))
        }
        afterFlight(key, result, actor: actor)
        return result
    }

    /// Calls the IdP with the locked row's refresh token and says what to write.
    private func spend(_ locked: Session, client: ClientRegistration, now: Date) -> (write: Session?, result: FlightResult) {
        let started = clock.now()
        let grant: TokenGrant
        do {
            grant = try endpoint.refresh(client: client, refreshToken: locked.refreshToken ?? "")
        } catch {
            metrics.refreshLatency.observe(clock.now().timeIntervalSince(started))
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
            switch error {
            case .transient(let reason, let retryAfter):
                s.lastError = reason
                return (s, .failure(.idpUnavailable(retryAfter: retryAfter)))
            case .oauth(let o):
                s.lastError = "\(o.error) (HTTP \(o.status))"
            case .invalidResponse(let reason), .metadata(let reason):
                s.lastError = reason
            }
            return (s, .failure(.idpUnavailable(retryAfter: nil)))
        }
        let finished = clock.now()
        metrics.refreshLatency.observe(finished.timeIntervalSince(started))
        metrics.refreshes.add("ok")
        let s = Self.apply(grant, to: locked, policy: client.refreshPolicy, now: finished, jitter: jitter())
        return (s, .success((s, true)))
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

    /// Publishes what other replicas must know and keeps this replica's cache current.
    private func afterFlight(_ key: SessionKey, _ result: FlightResult, actor: String) {
        let now = clock.now()
        switch result {
        case .success(let (s, refreshed)):
            cache.put(s, now: now)
            if refreshed {
                audit.record(AuditEvent(at: now, actor: actor, action: "session.refresh", tenant: key.tenant, session: key.id, outcome: "ok"))
            }
        case .failure(.sessionNotActive(let state)):
            cache.remove(key)
            feed.publish(.session(tenant: key.tenant, id: key.id))
            audit.record(AuditEvent(at: now, actor: actor, action: "session.refresh", tenant: key.tenant, session: key.id, outcome: state.rawValue))
        case .failure(let e):
            cache.remove(key)
            audit.record(AuditEvent(at: now, actor: actor, action: "session.refresh", tenant: key.tenant, session: key.id, outcome: e.code))
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
