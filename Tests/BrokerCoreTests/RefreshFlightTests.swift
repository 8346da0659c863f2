import BrokerCore
import Foundation
import Testing

/// One test per transition of the refresh driver's loop. No thread, no clock: `now` is an argument.
@Suite("Refresh flight: the driver's loop")
struct RefreshFlightTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let need = TokenRequirement(minTTL: 60)
    var demand: RefreshTrigger { .demand(seenVersion: 7, need: need) }

    func row(version: Int64 = 7, refreshToken: String? = "rt-0", state: SessionState = .active, next: Date? = nil,
             backoff: Date? = nil) -> Session {
        Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: ["openid"], accessToken: "at-0",
                accessExpiresAt: t0 + 10, accessLifetime: 3600, refreshToken: refreshToken, state: state, nextRefreshAt: next,
                version: version, grantedAt: t0 - 86_400, createdAt: t0 - 86_400, backoffUntil: backoff)
    }

    let attempt = RefreshAttempt(id: "a1", startedAt: Date(timeIntervalSince1970: 1_800_000_000))

    /// A flight past its begin.
    func flight(_ trigger: RefreshTrigger, lockTimeout: TimeInterval = 10) -> RefreshFlight {
        var f = RefreshFlight(trigger, now: t0, lockTimeout: lockTimeout)
        _ = f.begin(holdingAnswer: false)
        return f
    }

    // MARK: begin and the held answer

    @Test("a timer's first start is a compare-and-set over the row; a caller's queues for the lock")
    func beginChoosesTheGuard() {
        var due = RefreshFlight(.due, now: t0, lockTimeout: 10)
        #expect(due.begin(holdingAnswer: false) == .start(.compareAndSet))
        var onDemand = RefreshFlight(demand, now: t0, lockTimeout: 10)
        #expect(onDemand.begin(holdingAnswer: false) == .start(.lock(timeout: 10)))
        #expect(onDemand.deadline == t0 + 10 && due.deadline == t0)
    }

    @Test("an answer held for the database goes first; once written, the flight starts")
    func heldAnswerFirst() {
        var f = RefreshFlight(demand, now: t0, lockTimeout: 10)
        #expect(f.begin(holdingAnswer: true) == .writeHeldAnswer)
        #expect(f.starts == 0)
        #expect(f.heldAnswerWritten(stored: true) == .start(.lock(timeout: 10)))
    }

    @Test("a held answer the database still refuses ends the flight: nothing is started over it")
    func heldAnswerRefused() {
        var f = RefreshFlight(.due, now: t0, lockTimeout: 10)
        _ = f.begin(holdingAnswer: true)
        #expect(f.heldAnswerWritten(stored: false) == .end(.init(result: .failure(.storeUnavailable))))
    }

    // MARK: starts

    @Test("a compare-and-set that meets a stop or a resolution leaves it to the lock, tried once, in the same start")
    func compareAndSetDeclined() {
        var f = flight(.due)
        #expect(f.compareAndSetDeclined() == .start(.lock(timeout: 0)))
        #expect(f.starts == 1)
    }

    @Test("a start that fails ends the flight; a busy lock counts as contention for a caller, not for a timer")
    func startFailed() {
        var caller = flight(demand)
        #expect(caller.startFailed(.refreshBusy) == .end(.init(result: .failure(.refreshBusy), contention: true)))
        var timer = flight(.due)
        #expect(timer.startFailed(.refreshBusy) == .end(.init(result: .failure(.refreshBusy))))
        var down = flight(demand)
        #expect(down.startFailed(.storeUnavailable) == .end(.init(result: .failure(.storeUnavailable))))
    }

    @Test("a row that serves ends the flight unrefreshed, counted as skipped")
    func startedServe() {
        var f = flight(demand)
        #expect(f.started(.serve(row()), row: row(), now: t0) == .end(.init(result: .success(row()), outcome: "skipped")))
    }

    @Test("an idle session's rest ends the flight, counted as idle")
    func startedRest() {
        var f = flight(.due)
        #expect(f.started(.rest(write: row(version: 8)), row: row(), now: t0) == .end(.init(result: .success(row(version: 8)), outcome: "idle")))
    }

    @Test("a stop ends the flight with its error, and logs when it wrote the session's end")
    func startedStop() {
        var f = flight(demand)
        guard case .end(let e) = f.started(.stop(write: row(state: .needsReauth), .sessionNotActive(.needsReauth)), row: row(), now: t0) else {
            Issue.record("expected an end"); return
        }
        #expect(e.result == .failure(.sessionNotActive(.needsReauth)) && e.event?.code == "needs_reauth")
        var quiet = flight(demand)
        #expect(quiet.started(.stop(write: nil, .insufficientScope(missing: ["x"])), row: row(), now: t0)
                == .end(.init(result: .failure(.insufficientScope(missing: ["x"])))))
    }

    @Test("a caller meeting another replica's attempt waits for its notice until its deadline, and the wait is no start")
    func startedWaitForNotice() {
        var f = flight(demand)
        #expect(f.started(.wait(until: t0 + 125, .refreshBusy), row: row(), now: t0 + 1) == .waitForNotice(until: t0 + 10))
        #expect(f.starts == 0)
        #expect(f.noticed() == .start(.lock(timeout: 10)))
        #expect(f.starts == 1)
        #expect(f.started(.wait(until: t0 + 3, .refreshBusy), row: row(), now: t0 + 2) == .waitForNotice(until: t0 + 3))
    }

    @Test("past the deadline, or for a timer, or in a backoff, a wait ends the flight with when to come back")
    func startedWaitEnds() {
        var late = flight(demand)
        #expect(late.started(.wait(until: t0 + 125, .refreshBusy), row: row(), now: t0 + 10)
                == .end(.init(result: .failure(.refreshBusy), retryAt: t0 + 125, contention: true)))
        var timer = flight(.due)
        #expect(timer.started(.wait(until: t0 + 125, .refreshBusy), row: row(), now: t0)
                == .end(.init(result: .failure(.refreshBusy), retryAt: t0 + 125)))
        var backoff = flight(demand)
        #expect(backoff.started(.wait(until: t0 + 30, .idpUnavailable(retryAfter: 30)), row: row(), now: t0)
                == .end(.init(result: .failure(.idpUnavailable(retryAfter: 30)), retryAt: t0 + 30)))
    }

    @Test("an abandoned attempt is resolved from the token the row holds, never presented")
    func startedResolve() {
        var f = flight(.due)
        #expect(f.started(.resolve(attempt), row: row(), now: t0) == .resolve(attempt, presented: "rt-0"))
    }

    @Test("a recorded attempt presents its token once")
    func startedSend() {
        var f = flight(demand)
        #expect(f.started(.send(write: row(version: 8), attempt: attempt, refreshToken: "rt-0"), row: row(), now: t0)
                == .present(write: row(version: 8), attempt: attempt, refreshToken: "rt-0"))
    }

    // MARK: after the IdP

    @Test("a refreshed session ends the flight, counted ok, the written row kept")
    func answeredDone() {
        var f = flight(demand)
        _ = f.started(.send(write: row(version: 8), attempt: attempt, refreshToken: "rt-0"), row: row(), now: t0)
        let done = RefreshFinish(write: row(version: 9), result: .success(row(version: 9)))
        #expect(f.answered(done) == .end(.init(result: .success(row(version: 9)), refreshed: true, outcome: "ok", keep: row(version: 9))))
    }

    @Test("an ambiguous outcome resolves the attempt this flight sent, with the token it presented")
    func answeredResolve() {
        var f = flight(demand)
        _ = f.started(.send(write: row(version: 8), attempt: attempt, refreshToken: "rt-0"), row: row(refreshToken: "rt-other"), now: t0)
        #expect(f.answered(RefreshFinish(result: .failure(.refreshBusy), next: .resolve)) == .resolve(attempt, presented: "rt-0"))
    }

    @Test("an attempt resolved as not acted on starts again, up to four starts; then refresh_busy")
    func againUntilTheLimit() {
        var f = flight(.due)
        let again = RefreshFinish(result: .failure(.refreshBusy), next: .again)
        #expect(f.resolved(again) == .start(.lock(timeout: 0)))
        #expect(f.resolved(again) == .start(.lock(timeout: 0)))
        #expect(f.resolved(again) == .start(.lock(timeout: 0)))
        #expect(f.starts == RefreshFlight.maxStarts)
        #expect(f.resolved(again) == .end(.init(result: .failure(.refreshBusy))))
    }

    @Test("a failed outcome ends with its backoff as the time to come back, counted by kind")
    func resolvedFailure() {
        var f = flight(demand)
        let backingOff = row(version: 9, next: t0 + 30, backoff: t0 + 30)
        #expect(f.resolved(RefreshFinish(write: backingOff, result: .failure(.idpUnavailable(retryAfter: nil))))
                == .end(.init(result: .failure(.idpUnavailable(retryAfter: nil)), retryAt: t0 + 30, outcome: "failed", keep: backingOff)))
        var ended = flight(demand)
        #expect(ended.resolved(RefreshFinish(write: row(state: .needsReauth), result: .failure(.sessionNotActive(.needsReauth))))
                == .end(.init(result: .failure(.sessionNotActive(.needsReauth)), outcome: "needs_reauth")))
        var rejected = flight(demand)
        #expect(rejected.resolved(RefreshFinish(result: .failure(.idpRejectedClient))) == .end(.init(result: .failure(.idpRejectedClient), outcome: "client_rejected")))
        var unresolved = flight(demand)
        #expect(unresolved.resolved(RefreshFinish(result: .failure(.refreshBusy))) == .end(.init(result: .failure(.refreshBusy), outcome: "unresolved")))
    }

    // MARK: the compare-and-set's reading of a start

    @Test("a start written by compare-and-set: attempts and rests; stops that write and resolutions go to the lock")
    func compareAndSetOfStarts() {
        #expect(RefreshStart.send(write: row(version: 8), attempt: attempt, refreshToken: "rt-0").compareAndSet == .write(row(version: 8)))
        #expect(RefreshStart.rest(write: row(version: 8)).compareAndSet == .write(row(version: 8)))
        #expect(RefreshStart.serve(row()).compareAndSet == .nothing)
        #expect(RefreshStart.wait(until: t0, .refreshBusy).compareAndSet == .nothing)
        #expect(RefreshStart.stop(write: nil, .refreshBusy).compareAndSet == .nothing)
        #expect(RefreshStart.stop(write: row(state: .needsReauth), .sessionNotActive(.needsReauth)).compareAndSet == .declined)
        #expect(RefreshStart.resolve(attempt).compareAndSet == .declined)
        #expect(RefreshStart.resolve(attempt).write == nil && RefreshStart.rest(write: row(version: 8)).write == row(version: 8))
    }
}
