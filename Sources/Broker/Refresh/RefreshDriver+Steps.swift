import BrokerCore
import Foundation

extension RefreshDriver {
    /// Presents the refresh token once and checks the ID token that comes back.
    func present(_ token: String, row: Session, client: ClientRegistration) -> RefreshOutcome {
        let started = clock.now(), label = TokenMetrics.ClientLabel(tenant: client.tenant, client: client.id)
        let grant: TokenGrant
        do {
            grant = try endpoint.refresh(client: client, refreshToken: token, patience: patience, dpop: try prover(row))
        } catch {
            metrics.refreshLatency.observe(label, clock.now().timeIntervalSince(started))
            return .failed(error)
        }
        metrics.refreshLatency.observe(label, clock.now().timeIntervalSince(started))
        // A plain OAuth 2.0 provider's answer carries no ID token (TokenResponse does not read one).
        guard client.descriptor.kind == .oidc, let id = grant.idToken, let idTokens else { return .granted(grant, idToken: .valid) }
        // OIDC Core §12.2: same issuer, subject and client, no nonce. It came on the
        // authenticated token-endpoint channel, so an unknown kid earns a JWKS re-fetch.
        var expect = IDTokenExpectation(issuer: row.issuer, clientID: client.clientID, nonce: nil, subject: row.subject,
                                        algorithms: client.idTokenAlgorithms)
        expect.issuerTemplate = client.descriptor.issuerTemplate
        do {
            _ = try idTokens.verify(id, expect, trustAnchors: client.trustAnchors, now: clock.now(), budget: .refresh)
            return .granted(grant, idToken: .valid)
        } catch {
            switch error {
            case .rejected(let why): return .granted(grant, idToken: .rejected(why.reason))
            case .keysUnavailable: return .granted(grant, idToken: .keysUnavailable)
            }
        }
    }

    /// The session's DPoP key ready to prove (RFC 9449 §5), or nil for a bearer session. A key
    /// that cannot be loaded stops the call before anything is sent: without its proof the IdP
    /// would refuse, and another key would break the binding.
    private func prover(_ row: Session) throws(TokenEndpointError) -> DPoPProof? {
        guard let key = row.dpopKey else { return nil }
        guard let p = dpopKeys?.prover(key) else { throw .notSent("the session's DPoP key cannot be loaded") }
        return p
    }

    /// Writes what an attempt's outcome means. `seen` is the row as this flight wrote it with
    /// the attempt: while nobody wrote since (almost always), the outcome is decided on it and
    /// written in one version-checked statement, with no lock and no re-read (two of a refresh's
    /// four round trips, and a row's unsealing); otherwise, and whenever tokens are to be
    /// revoked, under the lock on the row as it is. When the write cannot be committed, the
    /// answer is kept in memory and written when the database is back.
    func complete(_ a: PendingAnswers.Answer, seen: Session? = nil) -> RefreshFinish {
        do {
            // After a change of database server and before its re-application is done, the new
            // server may lack the very attempt this answers (and the rotation before it): that
            // session is re-applied first, or the answer stays in memory until it can be.
            // Written over a rolled-back row, the answer would look orphaned and its token,
            // perhaps the grant's only live one, be revoked. (A refresh this replica did not
            // present clears its own attempt as usual: the re-application follows.)
            if case .failed(.notSent) = a.outcome {} else { try reapplyFirst(a.key) }
            let f = try journaled(a.key) { () throws -> (RefreshFinish, Session?, Session?) in
                if let seen, let f = try finishUnlocked(a, over: seen) { return (f, f.write, seen) }
                return try store.withRefreshLockQueuing(tenant: a.key.tenant, id: a.key.id, timeout: lockTimeout) { row in
                    let f = finish(a, row)
                    return (f.write, f.revoke, (f, f.write, row))
                }
            }
            if let e = f.event { log(a.key, a.client, e) }
            if case .failure(.idpRejectedClient) = f.result { metrics.clientRejected.add(a.key.tenant + "/" + a.client.id) }
            return f
        } catch {
            if case .notFound = brokerError(error, a.key) { return RefreshFinish(result: .failure(.notFound("session"))) }
            pending.hold(a)
            log(a.key, a.client, RefreshEvent(.error, "refresh_write_pending", "the IdP answered but the database did not take the write; kept in memory, retrying"))
            return RefreshFinish(result: .failure(.storeUnavailable))
        }
    }

    private func finish(_ a: PendingAnswers.Answer, _ row: Session) -> RefreshFinish {
        RefreshMachine.finish(row, attempt: a.attempt, sentAt: a.sentAt, outcome: a.outcome, presented: a.presented,
                              context(a.client, now: clock.now()))
    }

    /// The outcome decided on the row as this flight wrote it, when it writes that row and
    /// revokes nothing and the store took the write over it unchanged; nil leaves it to the lock.
    private func finishUnlocked(_ a: PendingAnswers.Answer, over seen: Session) throws -> RefreshFinish? {
        let f = finish(a, seen)
        guard let w = f.write, f.revoke.isEmpty, try store.writeIfUnchanged(w, over: seen) else { return nil }
        return f
    }

    /// Resolves an attempt whose outcome never arrived, from introspection of the refresh
    /// token it presented (RFC 7662) or the client's policy — never by presenting it again.
    func resolve(_ key: SessionKey, _ client: ClientRegistration, _ attempt: RefreshAttempt, token: String?) -> RefreshFinish {
        let evidence: AttemptEvidence
        if let token {
            do {
                switch try endpoint.introspect(client: client, token: token, hint: "refresh_token") {
                case nil: evidence = .noIntrospection
                case true?: evidence = .active
                case false?: evidence = .inactive
                }
            } catch { evidence = .unknown(error.reason) }
        } else {
            evidence = .inactive
        }
        do {
            let f = try journaled(key) {
                try store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: lockTimeout) { row in
                    let f = RefreshMachine.resolve(row, attempt: attempt, evidence: evidence, context(client, now: clock.now()))
                    return (f.write, f.revoke, (f, f.write, row))
                }
            }
            if let e = f.event { log(key, client, e) }
            return f
        } catch {
            return RefreshFinish(result: .failure(brokerError(error, key)))
        }
    }

    /// Runs a refresh write alone for the session (FailoverGuard.serialized) and keeps what it
    /// committed in the failover journal: `body` answers its result, the row it wrote (nil:
    /// none) and the row it wrote over.
    func journaled<T>(_ key: SessionKey, _ body: () throws -> (T, Session?, Session?)) throws -> T {
        guard let failover else { return try body().0 }
        return try failover.serialized(key) {
            let (r, written, over) = try body()
            if let written, let over { failover.record(written, over: over, now: clock.now()) }
            return r
        }
    }

    func context(_ client: ClientRegistration, now: Date, blockedUntil: Date? = nil) -> RefreshContext {
        var c = RefreshContext(now: now, policy: client.refreshPolicy, retry: retry, patience: patience, onAmbiguous: client.onAmbiguousRefresh,
                               blockedUntil: blockedUntil, draw: (jitter() + 1) / 2, jitter: jitter(),
                               grant: client.descriptor.grant, refusals: client.refusals)
        c.presentsCertificate = client.authMethod.needsCertificate
        return c
    }

    func log(_ key: SessionKey, _ client: ClientRegistration, _ e: RefreshEvent) {
        events(LogLine(tenant: key.tenant, client: client.id, session: key.id, event: e))
    }

    /// Keeps this replica's cache current and tells other replicas what to forget (the new
    /// schedule was announced by the store with the write).
    func afterFlight(_ key: SessionKey, _ client: ClientRegistration, _ ending: RefreshFlight.Ending, actor: String) {
        let now = clock.now()
        switch ending.result {
        case .success(let s):
            cache.put(s, now: now)
            // A routine refresh is recorded on the row (version, last_refreshed_at) and in the
            // metrics; the audit trail keeps what someone must look at: failures, needs_reauth,
            // and refreshes a caller forced.
            if ending.refreshed && actor != "engine" {
                audit.record(AuditEvent(at: now, actor: actor, action: .sessionRefresh, tenant: key.tenant, session: key.id, outcome: "ok"))
            }
        case .failure(.sessionNotActive(let state)):
            cache.remove(key)
            feed.publish(.session(tenant: key.tenant, id: key.id))
            audit.record(AuditEvent(at: now, actor: actor, action: .sessionRefresh, tenant: key.tenant, session: key.id, outcome: state.rawValue))
        case .failure(let e):
            switch e {
            case .refreshBusy, .idpUnavailable, .idpRejectedClient: break   // the cached row (with its backoff) stays
            default: cache.remove(key)
            }
            if e != .refreshBusy {
                audit.record(AuditEvent(at: now, actor: actor, action: .sessionRefresh, tenant: key.tenant, session: key.id, outcome: e.code))
            }
        }
    }

    /// A store or IdP failure as the error callers get; an unexpected one is an internal error,
    /// and its cause is logged.
    func brokerError(_ error: any Error, _ key: SessionKey? = nil, doing what: String = "a refresh") -> BrokerError {
        BrokerError.answering(error) { events(.unexpected(tenant: key?.tenant ?? "", client: "", session: key?.id, doing: what, cause: $0)) }
    }
}
