import Foundation
import BrokerCore

extension TokenService {
    /// A flight's end: its result, and (when it did not refresh) the instant before which the
    /// IdP must not be called for this session — the timer follows it.
    typealias FlightEnd = (result: FlightResult, retryAt: Date?)

    /// One refresh flight, run by its leader on a worker thread: the refresh machine's steps,
    /// each decided under the session's cross-replica lock in a short transaction or written
    /// over the row it was decided on by a version-checked statement, the IdP call outside any
    /// transaction (spec §5). The attempt is committed before the call, so that
    /// whatever dies in between, nobody presents the refresh token again.
    func fly(_ key: SessionKey, client clientID: String, _ trigger: RefreshTrigger, actor: String, read: DueRow? = nil) -> FlightEnd {
        let end = run(key, clientID, trigger, read: read)
        afterFlight(key, end.result, actor: actor)
        return end
    }

    private func run(_ key: SessionKey, _ clientID: String, _ trigger: RefreshTrigger, read: DueRow?) -> FlightEnd {
        let deadline = clock.now().addingTimeInterval(trigger == .due ? 0 : lockTimeout)
        // An answer of ours still waiting for the database goes first: it is the truth.
        if let a = pending.take(key) {
            let f = complete(a)
            if case .failure(.storeUnavailable) = f.result { return (.failure(.storeUnavailable), nil) }
        }
        let client: ClientRegistration
        do {
            guard let c = try registry.client(tenant: key.tenant, id: clientID, now: clock.now()) else { return (.failure(.notFound("client")), nil) }
            client = c
        } catch { return (.failure(Self.brokerError(error)), nil) }
        let circuit = key.tenant + "/" + clientID
        // Waits are bounded by the deadline; fresh starts after a resolution by this count.
        var starts = 0
        while starts < 4 {
            starts += 1
            let now = clock.now()
            let (blocked, probe) = circuits.admit(circuit, now: now)
            let ctx = context(client, now: now, blockedUntil: blocked)
            var rng = SystemRandomNumberGenerator()
            let attemptID = "att_" + Identifiers.token(bytes: 12, using: &rng)
            let start: RefreshStart, row: Session
            do {
                (start, row) = try (trigger == .due && starts == 1 ? startUnlocked(key, ctx, attemptID: attemptID, read: read?.fresh(now)) : nil)
                    ?? store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: trigger == .due ? 0 : lockTimeout) { row in
                        let st = RefreshMachine.start(row, trigger, ctx, attemptID: attemptID)
                        switch st {
                        case .send(let w, _, _), .stop(let w?, _), .rest(let w): return (w, [], (st, row))
                        default: return (nil, [], (st, row))
                        }
                    }
            } catch {
                if probe { circuits.release(circuit) }
                let e = Self.brokerError(error)
                if e == .refreshBusy, trigger != .due { metrics.lockContention.add() }   // a timer's try-lock miss is no contention
                return (.failure(e), nil)
            }
            if case .send = start {} else if probe { circuits.release(circuit) }
            switch start {
            case .serve(let s):
                metrics.refreshed(key.tenant, clientID, "skipped")
                return (.success((s, false)), nil)
            case .rest(let s):
                metrics.refreshed(key.tenant, clientID, "idle")
                return (.success((s, false)), nil)
            case .stop(let written, let e):
                if let w = written { log(key, client, RefreshEvent(.warn, w.reason ?? "needs_reauth", "the session has nothing to refresh with; it needs a new sign-in")) }
                return (.failure(e), nil)
            case .wait(let until, let e):
                // Another replica's attempt is in flight: its commit notice wakes us (demand only).
                if case .demand = trigger, e == .refreshBusy, clock.now() < deadline {
                    notices.wait(key, until: min(until, deadline), now: clock.now())
                    starts -= 1
                    continue
                }
                if case .demand = trigger, e == .refreshBusy { metrics.lockContention.add() }
                return (.failure(e), until)
            case .resolve(let attempt):
                let f = resolve(key, client, attempt, token: row.refreshToken)
                if f.next == .again { continue }
                return flightEnd(f, key.tenant, clientID)
            case .send(let written, let attempt, let token):
                // Until the outcome is known, this replica does not serve the token being replaced.
                cache.put(written, now: clock.now())
                let outcome = present(token, row: row, client: client)
                var f = complete(PendingAnswers.Answer(key: key, client: client, attempt: attempt, presented: token,
                                                   sentAt: attempt.startedAt, outcome: outcome), seen: written)
                circuits.report(circuit, f.health, now: clock.now())
                if f.next == .resolve { f = resolve(key, client, attempt, token: token) }
                if f.next == .again { continue }
                return flightEnd(f, key.tenant, clientID)
            }
        }
        return (.failure(.refreshBusy), nil)
    }

    /// A due session's start without the lock: decided on the row as read, and what it writes
    /// (the attempt, or the rest of an idle session) written only if the row is still at that
    /// version — the version-checked write is the compare-and-set that the lock would have
    /// serialized, so two replicas deciding on the same row cannot both record an attempt. A
    /// row that moved on between the read and the write means another replica acted on it:
    /// `refreshBusy`, and its announcement reschedules the timer. One round trip less than the
    /// lock's transaction when a refresh is sent, and one statement when there is nothing to do
    /// (another replica refreshed it first: in a storm over three replicas, a third of the
    /// starts). Stops and resolutions (a state change, evidence to weigh) are left to the lock: nil.
    /// `read` is the row as read with the tick's other sessions (DueRow), which spares the read.
    private func startUnlocked(_ key: SessionKey, _ ctx: RefreshContext, attemptID: String, read: Session?) throws -> (RefreshStart, Session)? {
        guard let row = try read ?? store.session(tenant: key.tenant, id: key.id) else { throw BrokerError.notFound("session") }
        let start = RefreshMachine.start(row, .due, ctx, attemptID: attemptID)
        switch start {
        case .serve, .wait, .stop(nil, _): return (start, row)
        case .send(let w, _, _), .rest(let w):
            guard try store.writeIfUnchanged(w, over: row) else { throw BrokerError.refreshBusy }
            return (start, row)
        case .stop, .resolve: return nil
        }
    }

    /// Presents the refresh token once and checks the ID token that comes back.
    private func present(_ token: String, row: Session, client: ClientRegistration) -> RefreshOutcome {
        let started = clock.now(), label = TokenMetrics.ClientLabel(tenant: client.tenant, client: client.id)
        let grant: TokenGrant
        do {
            grant = try endpoint.refresh(client: client, refreshToken: token, patience: patience, dpop: try prover(row))
        } catch {
            metrics.refreshLatency.observe(label, clock.now().timeIntervalSince(started))
            return .failed(error)
        }
        metrics.refreshLatency.observe(label, clock.now().timeIntervalSince(started))
        guard let id = grant.idToken, let idTokens else { return .granted(grant, idToken: .valid) }
        // OIDC Core §12.2: same issuer, subject and client, no nonce. It came on the
        // authenticated token-endpoint channel, so an unknown kid earns a JWKS re-fetch.
        let expect = IDTokenExpectation(issuer: row.issuer, clientID: client.clientID, nonce: nil, subject: row.subject,
                                        algorithms: client.idTokenAlgorithms)
        do {
            _ = try idTokens.verify(id, expect, now: clock.now(), budget: .refresh)
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
            let f = try seen.flatMap { try finishUnlocked(a, over: $0) }
                ?? store.withRefreshLockQueuing(tenant: a.key.tenant, id: a.key.id, timeout: lockTimeout) { row in
                    let f = finish(a, row)
                    return (f.write, f.revoke, f)
                }
            if let e = f.event { log(a.key, a.client, e) }
            if case .failure(.idpRejectedClient) = f.result { metrics.clientRejected.add(a.key.tenant + "/" + a.client.id) }
            return f
        } catch {
            if case .notFound = Self.brokerError(error) { return RefreshFinish(result: .failure(.notFound("session"))) }
            pending.hold(a)
            log(a.key, a.client, RefreshEvent(.error, "refresh_write_pending", "the IdP answered but the database did not take the write; kept in memory, retrying"))
            return RefreshFinish(result: .failure(.storeUnavailable))
        }
    }

    private func finish(_ a: PendingAnswers.Answer, _ row: Session) -> RefreshFinish {
        RefreshMachine.finish(row, attempt: a.attempt, sentAt: a.sentAt, outcome: a.outcome, context(a.client, now: clock.now()))
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
    private func resolve(_ key: SessionKey, _ client: ClientRegistration, _ attempt: RefreshAttempt, token: String?) -> RefreshFinish {
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
            let f = try store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: lockTimeout) { row in
                let f = RefreshMachine.resolve(row, attempt: attempt, evidence: evidence, context(client, now: clock.now()))
                return (f.write, f.revoke, f)
            }
            if let e = f.event { log(key, client, e) }
            return f
        } catch {
            return RefreshFinish(result: .failure(Self.brokerError(error)))
        }
    }

    /// Writes the answers kept in memory (called periodically); returns how many are left.
    @discardableResult
    public func retryPendingAnswers() -> Int {
        for a in pending.all() {
            guard pending.take(a.key) != nil else { continue }
            let f = complete(a)
            if case .failure(.storeUnavailable) = f.result { continue }
            var result = f
            if f.next == .resolve { result = resolve(a.key, a.client, a.attempt, token: a.presented) }
            afterFlight(a.key, flightEnd(result, a.key.tenant, a.client.id).result, actor: "engine")
        }
        return pending.count
    }

    private func flightEnd(_ f: RefreshFinish, _ tenant: String, _ client: String) -> FlightEnd {
        // The row as written (a backoff, say) answers the next callers from memory.
        if let w = f.write, w.state == .active { cache.put(w, now: clock.now()) }
        switch f.result {
        case .success(let s):
            metrics.refreshed(tenant, client, "ok")
            return (.success((s, true)), nil)
        case .failure(let e):
            switch e {
            case .sessionNotActive: metrics.refreshed(tenant, client, "needs_reauth")
            case .idpRejectedClient: metrics.refreshed(tenant, client, "client_rejected")
            case .refreshBusy: metrics.refreshed(tenant, client, "unresolved")
            default: metrics.refreshed(tenant, client, "failed")
            }
            return (.failure(e), f.write?.backoffUntil ?? f.write?.nextRefreshAt)
        }
    }

    func context(_ client: ClientRegistration, now: Date, blockedUntil: Date? = nil) -> RefreshContext {
        RefreshContext(now: now, policy: client.refreshPolicy, retry: retry, patience: patience, onAmbiguous: client.onAmbiguousRefresh,
                       blockedUntil: blockedUntil, draw: (jitter() + 1) / 2, jitter: jitter())
    }

    private func log(_ key: SessionKey, _ client: ClientRegistration, _ e: RefreshEvent) {
        events(LogLine(tenant: key.tenant, client: client.id, session: key.id, event: e))
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

    /// The token handed out for a session that passed the decision: expiry to the millisecond,
    /// `expires_in` rounded down so that it never promises more than is left; with a DPoP proof
    /// bound to it (`ath`) for each target the worker named (DPoPKeys.proofs: none for a bearer token).
    /// A plain token carries `memo`, where its rendered document is kept (a cache entry's).
    func issue(_ s: Session, now: Date, _ request: TokenRequest, memo: TokenDocumentMemo? = nil) -> Result<IssuedToken, BrokerError> {
        let exp = s.accessExpiresAt ?? now
        var t = IssuedToken(accessToken: s.accessToken ?? "", tokenType: s.accessTokenType, expiresAt: exp,
                            expiresIn: max(0, Int(exp.timeIntervalSince(now).rounded(.down))), scope: s.scopes,
                            sessionID: s.id, subject: s.subject)
        guard !request.dpop.isEmpty else {
            // The memo holds a document whose only moving member is expires_in: never one whose
            // expires_at would be `now`.
            if s.accessExpiresAt != nil { t.memo = memo }
            return .success(t)
        }
        guard let keys = dpopKeys else { return .failure(.internalError) }
        return keys.proofs(request.dpop, token: t.accessToken, type: t.tokenType, key: s.dpopKey, now: now).map { proofs in
            t.dpopProofs = proofs
            return t
        }
    }

    /// Audits the hand-out or refusal, counts it, and passes the result through.
    @discardableResult
    func finish(_ r: Result<IssuedToken, BrokerError>, _ principal: Principal, _ tenant: String, _ session: String?,
                _ now: Date, refreshed: Bool = false) -> Result<IssuedToken, BrokerError> {
        var log: HandOutLog? = nil
        return finish(r, principal, tenant, session, now, refreshed: refreshed, into: &log)
    }

    /// The same; with a `log` (a batch), the audit event and the usage mark are collected there
    /// and recorded with the batch's others.
    func finish(_ r: Result<IssuedToken, BrokerError>, _ principal: Principal, _ tenant: String, _ session: String?,
                _ now: Date, refreshed: Bool = false, into log: inout HandOutLog?) -> Result<IssuedToken, BrokerError> {
        let outcome: String
        switch r {
        case .success(let t):
            outcome = refreshed ? "refreshed" : "cached"
            if let session {
                let key = SessionKey(tenant: tenant, id: session)
                if log == nil { usage.record(key, at: now) } else { log?.used.append(key) }
            }
            audit.recordProofs(t, actor: principal.id, tenant: tenant, at: now)
        case .failure(let e):
            outcome = e.code
        }
        if outcome == "cached" { metrics.cachedHandOuts.add() } else { metrics.tokenRequests.add(outcome) }
        let event = AuditEvent(at: now, actor: principal.id, action: .tokenIssue, tenant: tenant, session: session, outcome: outcome)
        if log == nil { audit.record(event) } else { log?.events.append(event) }
        return r
    }

    static func brokerError(_ error: any Error) -> BrokerError {
        (error as? BrokerError) ?? .internalError
    }
}
