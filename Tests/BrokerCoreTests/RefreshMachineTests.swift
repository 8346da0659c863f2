import BrokerCore
import Foundation
import Testing

/// One test per transition of the refresh machine. No clock runs: `now` is an argument.
@Suite("Refresh machine")
struct RefreshMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var ctx: RefreshContext { RefreshContext(now: t0, patience: 120, draw: 1, jitter: 0) }
    let need = TokenRequirement(minTTL: 60)

    func row(ttl: TimeInterval? = 10, refreshToken: String? = "rt-0", attempt: RefreshAttempt? = nil, backoff: Date? = nil,
             state: SessionState = .active, reason: String? = nil, usedAgo: TimeInterval = 60, refreshedAgo: TimeInterval = 3000) -> Session {
        Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: ["openid"], accessToken: ttl == nil ? nil : "at-0",
                accessExpiresAt: ttl.map { t0 + $0 }, accessLifetime: 3600, refreshToken: refreshToken, state: state,
                nextRefreshAt: t0 - 1, version: 7, grantedAt: t0 - 86_400, createdAt: t0 - 86_400, lastUsedAt: t0 - usedAgo,
                lastRefreshedAt: t0 - refreshedAgo, attempt: attempt, backoffUntil: backoff, reason: reason)
    }

    let grant = TokenGrant(accessToken: "at-1", tokenType: .bearer, expiresIn: 60, refreshToken: "rt-1", scope: nil, idToken: nil)

    func sent(_ r: Session) -> (Session, RefreshAttempt) {
        guard case .send(let w, let a, _) = RefreshMachine.start(r, .demand(seenVersion: 7, need: need), ctx, attemptID: "a1") else {
            Issue.record("expected a send")
            return (r, RefreshAttempt(id: "a1", startedAt: t0))
        }
        return (w, a)
    }

    // MARK: start

    @Test("a row that satisfies the caller is served, nothing written")
    func startServes() {
        #expect(RefreshMachine.start(row(ttl: 600), .demand(seenVersion: 7, need: need), ctx, attemptID: "a1") == .serve(row(ttl: 600)))
    }

    @Test("sending records the attempt in the row before the call (version bumped, token presented once)")
    func startRecordsAttempt() {
        guard case .send(let w, let a, let token) = RefreshMachine.start(row(), .demand(seenVersion: 7, need: need), ctx, attemptID: "a1") else {
            Issue.record("expected a send"); return
        }
        #expect(a == RefreshAttempt(id: "a1", startedAt: t0))
        #expect(w.attempt == a && w.version == 8 && token == "rt-0")
        #expect(w.nextRefreshAt == t0 + 120 + RefreshMachine.margin)   // other replicas' timers stay away meanwhile
    }

    @Test("while an attempt stands, nobody presents the token: callers wait for it")
    func startWaitsForAttemptInFlight() {
        let r = row(attempt: RefreshAttempt(id: "other", startedAt: t0 - 30))
        #expect(RefreshMachine.start(r, .demand(seenVersion: 7, need: need), ctx, attemptID: "a1")
                == .wait(until: t0 - 30 + 120 + RefreshMachine.margin, .refreshBusy))
        #expect(RefreshMachine.start(r, .due, ctx, attemptID: "a1") == .wait(until: t0 - 30 + 125, .refreshBusy))
    }

    @Test("an attempt older than patience + margin is resolved, never re-sent")
    func startResolvesStaleAttempt() {
        let a = RefreshAttempt(id: "dead", startedAt: t0 - 126)
        #expect(RefreshMachine.start(row(attempt: a), .due, ctx, attemptID: "a1") == .resolve(a))
        #expect(RefreshMachine.start(row(attempt: a), .demand(seenVersion: 7, need: need), ctx, attemptID: "a1") == .resolve(a))
    }

    @Test("during the session's backoff on-demand callers do not reach the IdP: 503 with Retry-After")
    func startHonoursBackoff() {
        #expect(RefreshMachine.start(row(backoff: t0 + 9.2), .demand(seenVersion: 7, need: need), ctx, attemptID: "a1")
                == .wait(until: t0 + 9.2, .idpUnavailable(retryAfter: 10)))
    }

    @Test("an open client circuit holds every session of the client")
    func startHonoursCircuit() {
        var c = ctx
        c.blockedUntil = t0 + 5
        #expect(RefreshMachine.start(row(), .due, c, attemptID: "a1") == .wait(until: t0 + 5, .idpUnavailable(retryAfter: 5)))
    }

    @Test("a circuit open because the IdP refused the client answers idp_client_rejected, never idp_unavailable")
    func startCircuitOfRefusedClient() {
        var c = ctx
        c.blockedUntil = t0 + 5
        c.blockedWith = .idpRejectedClient
        #expect(RefreshMachine.start(row(), .demand(seenVersion: 7, need: need), c, attemptID: "a1") == .wait(until: t0 + 5, .idpRejectedClient))
    }

    @Test("an active session without a refresh token needs a new sign-in, written")
    func startWithoutRefreshToken() {
        guard case .stop(let w?, .sessionNotActive(.needsReauth)) = RefreshMachine.start(row(refreshToken: nil), .due, ctx, attemptID: "a1") else {
            Issue.record("expected a stop with a write"); return
        }
        #expect(w.state == .needsReauth && w.reason == "no_refresh_token" && w.version == 8)
    }

    @Test("a timer whose schedule moved serves the row; an inactive session is dropped")
    func startDueMovedOrInactive() {
        var moved = row()
        moved.nextRefreshAt = t0 + 100
        #expect(RefreshMachine.start(moved, .due, ctx, attemptID: "a1") == .serve(moved))
        #expect(RefreshMachine.start(row(state: .revoked), .due, ctx, attemptID: "a1") == .stop(write: nil, .sessionNotActive(.revoked)))
    }

    // MARK: finish

    @Test("a good answer is written, expiry counted from when the request was sent, attempt cleared")
    func finishGranted() throws {
        let (w, a) = sent(row())
        var later = ctx
        later.now = t0 + 12   // answered 12 s late
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), later)
        let s = try f.result.get()
        #expect(s.accessToken == "at-1" && s.refreshToken == "rt-1" && s.accessExpiresAt == t0 + 60 && s.attempt == nil)
        #expect(f.write == s && s.version == 9 && f.health == .ok && f.revoke.isEmpty)
    }

    @Test("a forged refreshed ID token ends the session and the received refresh token is revoked, not dropped")
    func finishIDTokenRejected() {
        let (w, a) = sent(row())
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .rejected("signature")), ctx)
        #expect(f.write?.state == .needsReauth && f.write?.reason == "id_token_rejected" && f.write?.refreshToken == nil)
        #expect(f.revoke == ["rt-1"] && f.result == .failure(.sessionNotActive(.needsReauth)))
    }

    @Test("issuer keys unavailable: the new refresh token is kept, nothing handed out, retried later")
    func finishKeysUnavailable() {
        let (w, a) = sent(row())
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .keysUnavailable), ctx)
        #expect(f.write?.state == .active && f.write?.refreshToken == "rt-1" && f.write?.accessToken == nil)
        #expect(f.write?.attempt == nil && (f.write?.backoffUntil ?? t0) > t0)
        if case .failure(.idpUnavailable) = f.result {} else { Issue.record("expected idp_unavailable") }
    }

    @Test("invalid_grant ends the session with its reason")
    func finishInvalidGrant() {
        let (w, a) = sent(row())
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.oauth(OAuthError(error: "invalid_grant", description: nil, status: 400))), ctx)
        #expect(f.write?.state == .needsReauth && f.write?.reason == "invalid_grant" && f.result == .failure(.sessionNotActive(.needsReauth)))
    }

    @Test("a 400 with an empty body is a refusal that does not say the grant is dead: kept, backing off, reported; a bare 403 ends it")
    func finishBareRefusal() {
        let (w, a) = sent(row())
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.refused(status: 400, reason: "empty")), ctx)
        #expect(f.write?.state == .active && f.write?.refreshToken == "rt-0" && f.write?.backoffUntil != nil && f.write?.attempt == nil)
        #expect(f.event?.code == "refresh_refused_retried")
        let g = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.refused(status: 403, reason: "empty")), ctx)
        #expect(g.write?.state == .needsReauth && g.write?.reason == "refused_http_403")
    }

    @Test("invalid_client blames the client: session active without a backoff of its own, its own error, the circuit opened with that refusal")
    func finishClientRejected() {
        let (w, a) = sent(row())
        for e in [TokenEndpointError.oauth(OAuthError(error: "invalid_client", description: nil, status: 401)), .refused(status: 401, reason: "x"),
                  .oauth(OAuthError(error: "unauthorized_client", description: nil, status: 400))] {
            let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(e), ctx)
            #expect(f.write?.state == .active && f.write?.refreshToken == "rt-0" && f.write?.attempt == nil)
            #expect(f.write?.backoffUntil == nil && f.write?.nextRefreshAt ?? t0 > t0, "the timer looks later; callers are held by the circuit")
            #expect(f.result == .failure(.idpRejectedClient) && f.health == .refused(.idpRejectedClient))
        }
    }

    @Test("an IdP wanting DPoP proofs (invalid_dpop_proof, use_dpop_nonce) consumed nothing: the session stays active, its own event, never needs_reauth")
    func finishDPoPRequired() {
        let (w, a) = sent(row())
        for code in ["invalid_dpop_proof", "use_dpop_nonce"] {
            let e = TokenEndpointError.oauth(OAuthError(error: code, description: nil, status: 400))
            #expect(RefreshFailure.classify(e) == .dpopRequired)
            let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(e), ctx)
            #expect(f.write?.state == .active && f.write?.refreshToken == "rt-0" && f.write?.attempt == nil)
            #expect(f.result == .failure(.idpRejectedClient) && f.event?.code == "idp_requires_dpop")
        }
    }

    @Test("a refused provider certificate sent nothing: the session stays active with its refresh token, backs off, and the caller is told why")
    func finishCertificateRefused() {
        let (w, a) = sent(row())
        let e = TokenEndpointError.certificateRefused("/token: certificate has expired")
        #expect(RefreshFailure.classify(e) == .certificateRefused(reason: "/token: certificate has expired"))
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(e), ctx)
        #expect(f.write?.state == .active && f.write?.refreshToken == "rt-0" && f.write?.attempt == nil && f.write?.backoffUntil != nil)
        #expect(f.result == .failure(.idpCertificateRefused(reason: "/token: certificate has expired")) && f.event?.code == "idp_certificate_refused")
        #expect(f.health == .failed(retryAfter: nil))
    }

    @Test("5xx with Retry-After backs off at least that long; the IdP did not act, the attempt is cleared")
    func finishOutage() {
        let (w, a) = sent(row())
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.transient(reason: "HTTP 503", retryAfter: 10)), ctx)
        #expect(f.write?.attempt == nil && f.write?.backoffUntil.map { $0 >= t0 + 10 } == true && f.write?.nextRefreshAt == f.write?.backoffUntil)
        #expect(f.result == .failure(.idpUnavailable(retryAfter: 10)) && f.health == .failed(retryAfter: 10))
        let g = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(.notSent("connection refused")), ctx)
        #expect(g.write?.attempt == nil && g.write?.state == .active && g.next == .done)
    }

    @Test("no answer after sending is ambiguous: nothing written, the attempt stands until resolved")
    func finishUnanswered() {
        let (w, a) = sent(row())
        for e in [TokenEndpointError.unanswered("timeout"), .invalidResponse("not JSON")] {
            let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .failed(e), ctx)
            #expect(f.write == nil && f.next == .resolve)
        }
    }

    @Test("revoked while the call was in flight: the tokens received are revoked too")
    func finishAfterRevocation() {
        var (w, a) = sent(row())
        w.state = .revoked     // as the revocation wrote it: token material erased
        w.refreshToken = nil
        w.accessToken = nil
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx)
        #expect(f.revoke == ["rt-1"] && f.write?.state == .revoked && f.write?.accessToken == nil && f.result == .failure(.sessionNotActive(.revoked)))
    }

    @Test("an answer for an attempt the row no longer records, where the row moved on to another token, is never applied, and its token is revoked")
    func finishOrphaned() {
        let (w, _) = sent(row())   // the row holds rt-0; the old attempt presented rt-old
        let f = RefreshMachine.finish(w, attempt: RefreshAttempt(id: "old", startedAt: t0 - 300), sentAt: t0 - 300,
                                      outcome: .granted(grant, idToken: .valid), presented: "rt-old", ctx)
        #expect(f.write == nil && f.revoke == ["rt-1"] && f.result == .failure(.refreshBusy))   // the session itself is fine
        #expect(f.event?.code == "refresh_orphaned")
        #expect(f.event?.message.hasSuffix("the tokens received are revoked") == true)
        // An answer with no refresh token: nothing to revoke, and the line does not say otherwise.
        let bare = TokenGrant(accessToken: "at-1", tokenType: .bearer, expiresIn: 60, refreshToken: nil, scope: nil, idToken: nil)
        let g = RefreshMachine.finish(w, attempt: RefreshAttempt(id: "old", startedAt: t0 - 300), sentAt: t0 - 300,
                                      outcome: .granted(bare, idToken: .valid), presented: "rt-old", ctx)
        #expect(g.write == nil && g.revoke.isEmpty && g.event?.code == "refresh_orphaned")
        #expect(g.event?.message.hasSuffix("no refresh token came back, nothing is kept") == true)
    }

    @Test("an answer whose attempt record was lost (a failover) while the row still holds the token presented is written, never revoked")
    func finishAttemptRecordLost() throws {
        let lost = row()   // the new primary never received the write recording the attempt
        let a = RefreshAttempt(id: "a1", startedAt: t0)
        let f = RefreshMachine.finish(lost, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), presented: "rt-0", ctx)
        let s = try f.result.get()
        #expect(f.revoke.isEmpty && f.write == s && s.refreshToken == "rt-1" && s.attempt == nil && s.version == 8)
        #expect(f.event?.code == "refresh_attempt_lost")
        // Another attempt recorded since on the same token: not adopted (that attempt is live),
        // and what came back is not revoked either (it may be the only live token).
        let other = row(attempt: RefreshAttempt(id: "other", startedAt: t0))
        let g = RefreshMachine.finish(other, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), presented: "rt-0", ctx)
        #expect(g.revoke.isEmpty && g.write == nil && g.result == .failure(.refreshBusy))
        // A provider that returns no refresh token on refresh: a late answer never overwrites the row.
        let noRotation = TokenGrant(accessToken: "at-1", tokenType: .bearer, expiresIn: 60, refreshToken: nil, scope: nil, idToken: nil)
        let n = RefreshMachine.finish(lost, attempt: a, sentAt: t0, outcome: .granted(noRotation, idToken: .valid), presented: "rt-0", ctx)
        #expect(n.write == nil && n.revoke.isEmpty)
        // A failure of a lost attempt writes nothing: the row keeps the token, nothing was received.
        let h = RefreshMachine.finish(lost, attempt: a, sentAt: t0, outcome: .failed(.notSent("x")), presented: "rt-0", ctx)
        #expect(h.write == nil && h.revoke.isEmpty)
    }

    @Test("an answer already written (its COMMIT's acknowledgement lost) is not revoked when written again")
    func finishAlreadyWritten() throws {
        let (w, a) = sent(row())
        let written = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx).write!
        let again = RefreshMachine.finish(written, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx)
        let served = try again.result.get()
        #expect(again.write == nil && again.revoke.isEmpty && served == written)
    }

    @Test("attempts are matched by id: the start time comes back from the database rounded")
    func attemptMatchedByID() throws {
        var (w, a) = sent(row())
        w.attempt = RefreshAttempt(id: a.id, startedAt: a.startedAt + 0.000_000_4)
        let f = RefreshMachine.finish(w, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx)
        #expect(try f.result.get().refreshToken == "rt-1" && f.revoke.isEmpty)
    }

    @Test("an answer written late revives a session resolved as refresh_outcome_lost by the same attempt")
    func finishRevivesLost() throws {
        let (w, a) = sent(row())
        let lost = RefreshMachine.resolve(w, attempt: a, evidence: .inactive, ctx).write!
        let f = RefreshMachine.finish(lost, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx)
        #expect(try f.result.get().state == .active && f.write?.refreshToken == "rt-1" && f.write?.reason == nil)
    }

    @Test("a late failure, or a forged ID token, for an attempt given up as lost leaves the session ended")
    func finishLostStaysEnded() {
        let (w, a) = sent(row())
        let lost = RefreshMachine.resolve(w, attempt: a, evidence: .inactive, ctx).write!
        let late = RefreshMachine.finish(lost, attempt: a, sentAt: t0, outcome: .failed(.transient(reason: "HTTP 503", retryAfter: 3)), ctx)
        #expect(late.write?.state == .needsReauth && late.write?.attempt == nil && late.result == .failure(.sessionNotActive(.needsReauth)))
        let forged = RefreshMachine.finish(lost, attempt: a, sentAt: t0, outcome: .granted(grant, idToken: .rejected("signature")), ctx)
        #expect(forged.write?.state == .needsReauth && forged.revoke == ["rt-1"])
    }

    // MARK: resolve

    @Test("introspection says active: the IdP did not act; the attempt is cleared and the session due")
    func resolveActive() {
        let (w, a) = sent(row())
        let f = RefreshMachine.resolve(w, attempt: a, evidence: .active, ctx)
        #expect(f.next == .again && f.write?.attempt == nil && f.write?.state == .active && f.write?.nextRefreshAt == t0)
    }

    @Test("introspection says inactive: needs_reauth with reason refresh_outcome_lost, attempt kept for a late answer")
    func resolveInactive() {
        let (w, a) = sent(row())
        let f = RefreshMachine.resolve(w, attempt: a, evidence: .inactive, ctx)
        #expect(f.next == .done && f.write?.state == .needsReauth && f.write?.reason == "refresh_outcome_lost" && f.write?.attempt == a)
        #expect(f.write?.refreshToken == nil && f.result == .failure(.sessionNotActive(.needsReauth)))
    }

    @Test("no introspection and fail_closed: never retried")
    func resolveFailClosed() {
        let (w, a) = sent(row())
        let f = RefreshMachine.resolve(w, attempt: a, evidence: .noIntrospection, ctx)
        #expect(f.next == .done && f.write?.state == .needsReauth && f.write?.reason == "refresh_outcome_lost")
    }

    @Test("no introspection and on_ambiguous_refresh retry: presented again")
    func resolveRetryPolicy() {
        let (w, a) = sent(row())
        var c = ctx
        c.onAmbiguous = .retry
        #expect(RefreshMachine.resolve(w, attempt: a, evidence: .noIntrospection, c).next == .again)
    }

    @Test("introspection unavailable: the attempt stands, retried after a backoff")
    func resolveUnknown() {
        let (w, a) = sent(row())
        let f = RefreshMachine.resolve(w, attempt: a, evidence: .unknown("HTTP 503"), ctx)
        #expect(f.next == .done && f.write?.attempt == a && f.write?.state == .active && (f.write?.backoffUntil ?? t0) > t0)
    }

    @Test("an attempt somebody else resolved first is left alone")
    func resolveAlreadyResolved() {
        let (w, a) = sent(row())
        var cleared = w
        cleared.attempt = nil
        #expect(RefreshMachine.resolve(cleared, attempt: a, evidence: .inactive, ctx).write == nil)
    }

    // MARK: failure classification and the client circuit

    @Test("failures are classified by status first")
    func classification() {
        #expect(RefreshFailure.classify(.refused(status: 403, reason: "")) == .grantDead(reason: "refused_http_403"))
        #expect(RefreshFailure.classify(.oauth(OAuthError(error: "access_denied", description: nil, status: 403))) == .grantDead(reason: "access_denied"))
        #expect(RefreshFailure.classify(.oauth(OAuthError(error: "temporarily_unavailable", description: nil, status: 400))) == .outage(retryAfter: nil))
        #expect(RefreshFailure.classify(.transient(reason: "HTTP 502", retryAfter: 3)) == .outage(retryAfter: 3))
        #expect(RefreshFailure.classify(.unanswered("HTTP 504")) == .ambiguous)
    }

    @Test("a bare 403 refuses the client, not the grant, for a client that authenticates by its certificate (glewlwyd's answer to a certificate it does not take)")
    func bareForbiddenForCertificateClients() {
        var certificate = RefusalCodes()
        certificate.bareForbiddenRefusesClient = true
        #expect(RefreshFailure.classify(.refused(status: 403, reason: ""), certificate) == .clientRejected)
        #expect(RefreshFailure.classify(.refused(status: 400, reason: ""), certificate) == .retried(reason: "refused_http_400"))
        #expect(RefreshFailure.classify(.oauth(OAuthError(error: "access_denied", description: nil, status: 403)), certificate) == .grantDead(reason: "access_denied"))
        #expect(RefreshFailure.classify(.oauth(OAuthError(error: "invalid_grant", description: nil, status: 400)), certificate) == .grantDead(reason: "invalid_grant"))
    }

    @Test("a failing client: no call until Retry-After, then one probe; success closes the circuit")
    func circuit() {
        var c = ClientCircuit()
        #expect(c.admit(now: t0) == (nil, false))
        c.failed(retryAfter: 10, now: t0)
        #expect(c.admit(now: t0 + 9.9) == (t0 + 10, false))
        #expect(c.admit(now: t0 + 10) == (nil, true))        // the probe
        #expect(c.admit(now: t0 + 10.5).blockedUntil != nil) // others wait for it
        c.release()                                          // the probe made no call after all
        #expect(c.admit(now: t0 + 10.6) == (nil, true))
        c.failed(retryAfter: nil, now: t0 + 11)
        #expect(c.admit(now: t0 + 12) == (t0 + 13, false))   // backoff without Retry-After: 2 s after the 2nd failure
        c.succeeded()
        #expect(c.admit(now: t0 + 12) == (nil, false) && c.admit(now: t0 + 12) == (nil, false))
    }

    @Test("a circuit opened by a refusal of the client keeps that refusal while open; an outage or a success clears it")
    func circuitRemembersRefusal() {
        var c = ClientCircuit()
        c.failed(retryAfter: nil, now: t0, refusal: .idpRejectedClient)
        #expect(c.admit(now: t0 + 0.5) == (t0 + 1, false) && c.refusal == .idpRejectedClient)
        c.failed(retryAfter: nil, now: t0 + 1)
        #expect(c.refusal == nil)
        c.failed(retryAfter: nil, now: t0 + 3, refusal: .idpRejectedClient)
        c.succeeded()
        #expect(c.refusal == nil && c.admit(now: t0 + 3) == (nil, false))
    }

    // MARK: refresh in proportion to use

    @Test("an idle session's timer spends nothing: the schedule moves to its keep-alive")
    func dueIdleRests() {
        let idle = row(usedAgo: 4 * 3600, refreshedAgo: 3000)    // three lifetimes without a hand-out
        #expect(RefreshMachine.start(idle, .due, ctx, attemptID: "a1") == .rest(write: {
            var w = idle
            w.version += 1
            w.nextRefreshAt = t0 - 3000 + 86_400
            return w
        }()))
        guard case .send = RefreshMachine.start(row(usedAgo: 3 * 3600 - 1), .due, ctx, attemptID: "a1") else {
            Issue.record("a session used within three lifetimes is refreshed ahead of expiry"); return
        }
    }

    @Test("an idle session whose keep-alive is due is refreshed; so is one a worker asks for (a use); idle_after 0 never rests")
    func idleKeepAliveAndDemand() {
        guard case .send = RefreshMachine.start(row(usedAgo: 5 * 86_400, refreshedAgo: 86_400), .due, ctx, attemptID: "a1") else {
            Issue.record("the keep-alive refresh must run"); return
        }
        guard case .send(let woken, _, _) = RefreshMachine.start(row(usedAgo: 5 * 86_400), .demand(seenVersion: 7, need: need), ctx, attemptID: "a1") else {
            Issue.record("a worker's request refreshes an idle session on demand"); return
        }
        #expect(woken.lastUsedAt == t0, "asking is a use: the refresh's schedule is proactive again")
        var always = ctx
        always.policy.idleAfter = 0
        guard case .send = RefreshMachine.start(row(usedAgo: 5 * 86_400), .due, always, attemptID: "a1") else {
            Issue.record("idle_after 0 refreshes ahead of every expiry"); return
        }
    }

    @Test("after a refresh: an idle session is next due at its keep-alive, a used one ahead of expiry; the grant's end follows the policy")
    func finishSchedulesByUse() {
        let (usedW, usedA) = sent(row())
        let used = RefreshMachine.finish(usedW, attempt: usedA, sentAt: t0, outcome: .granted(grant, idToken: .valid), ctx).write!
        #expect(used.nextRefreshAt == t0 + 48 && used.refreshMode == "proactive")    // 60 s token, 20 % lead
        #expect(used.grantExpiresAt == t0 - 86_400 + 7 * 86_400, "fixed from the sign-in")
        // The keep-alive of a session unused for days (the timer's: no worker asked).
        guard case .send(let idleW, let idleA, _) = RefreshMachine.start(row(usedAgo: 5 * 86_400, refreshedAgo: 86_400), .due, ctx, attemptID: "a2") else {
            Issue.record("expected the keep-alive to be sent"); return
        }
        var rolling = ctx
        rolling.policy.grantLifetimeRolling = true
        rolling.policy.grantLifetime = 14 * 86_400
        let idle = RefreshMachine.finish(idleW, attempt: idleA, sentAt: t0, outcome: .granted(grant, idToken: .valid), rolling).write!
        #expect(idle.nextRefreshAt == t0 + 86_400 && idle.refreshMode == "idle")
        #expect(idle.grantExpiresAt == t0 + 14 * 86_400, "rolling from each refresh")
    }

    @Test("a policy stored by an older version keeps its values and takes the new defaults")
    func olderPolicyDecodes() throws {
        let old = #"{"leadFraction":0.1,"leadCap":120,"jitterSeconds":3,"minTTL":30}"#
        let p = try JSONDecoder().decode(RefreshPolicy.self, from: Data(old.utf8))
        #expect(p.leadFraction == 0.1 && p.leadCap == 120 && p.jitterSeconds == 3 && p.minTTL == 30)
        #expect(p.idleAfter == nil && p.keepaliveEvery == 86_400 && p.grantLifetime == 7 * 86_400 && !p.grantLifetimeRolling)
        #expect(RefreshPolicy(idleAfter: 5).problem != nil && RefreshPolicy(keepaliveEvery: 1).problem != nil)
    }
}
