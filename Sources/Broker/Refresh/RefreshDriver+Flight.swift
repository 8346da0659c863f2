import BrokerCore
import Foundation

extension RefreshDriver {
    /// One refresh flight, run by its leader on a worker thread: performs RefreshFlight's
    /// actions until it ends, then keeps the cache current and audits (`afterFlight`).
    func fly(_ key: SessionKey, _ client: ClientRegistration, _ trigger: RefreshTrigger, actor: String,
             read: DueRow? = nil) -> (result: FlightResult, retryAt: Date?) {
        let ending = run(key, client, trigger, read: read)
        conclude(key, client, ending, actor: actor)
        return (ending.result.map { ($0, ending.refreshed) }, ending.retryAt)
    }

    /// What a flight's ending leaves: its counts and log line, the cache kept current, the
    /// other replicas told, the audit trail.
    func conclude(_ key: SessionKey, _ client: ClientRegistration, _ ending: RefreshFlight.Ending, actor: String) {
        if ending.contention { metrics.lockContention.add() }
        if let outcome = ending.outcome { metrics.refreshed(key.tenant, client.id, outcome) }
        if let e = ending.event { log(key, client, e) }
        if let w = ending.keep { cache.put(w, now: clock.now()) }
        afterFlight(key, client, ending, actor: actor)
    }

    private func run(_ key: SessionKey, _ client: ClientRegistration, _ trigger: RefreshTrigger, read: DueRow?) -> RefreshFlight.Ending {
        var flight = RefreshFlight(trigger, now: clock.now(), lockTimeout: lockTimeout)
        let circuit = key.tenant + "/" + client.id
        var held = pending.take(key)
        var action = flight.begin(holdingAnswer: held != nil)
        var row: Session? = nil
        /// The failover fence's epoch when the current start was decided.
        var epoch = 0
        while true {
            switch action {
            case .writeHeldAnswer:
                let stored: Bool
                if let a = held, case .failure(.storeUnavailable) = complete(a).result { stored = false } else { stored = true }
                held = nil
                action = flight.heldAnswerWritten(stored: stored)
            case .start(let how):
                if let held = failover?.heldUntil(now: clock.now()) {
                    // After a change of database server: nothing is started before this replica
                    // re-applied what it committed, and the others had time to (FailoverFence).
                    if case .demand = flight.trigger { failover?.waitOpen(until: flight.deadline, clock: clock) }
                    if let still = failover?.heldUntil(now: clock.now()) {
                        action = flight.held(until: still == .distantFuture ? clock.now().addingTimeInterval(1) : still)
                        continue
                    }
                }
                epoch = failover?.epoch ?? 0
                let now = clock.now()
                let (blocked, probe, refusal) = circuits.admit(circuit, now: now)
                var ctx = context(client, now: now, blockedUntil: blocked)
                ctx.blockedWith = refusal
                do {
                    // The flight's trigger, not the one it began with: after an attempt resolved
                    // for another try, a demand has seen the version that resolution wrote.
                    guard let (start, r) = try self.start(key, how, flight.trigger, ctx, read: how == .compareAndSet ? read?.fresh(now) : nil) else {
                        if probe { circuits.release(circuit) }
                        action = flight.compareAndSetDeclined()
                        continue
                    }
                    if case .send = start {} else if probe { circuits.release(circuit) }
                    row = r
                    action = flight.started(start, row: r, now: clock.now())
                } catch {
                    if probe { circuits.release(circuit) }
                    action = flight.startFailed(brokerError(error, key))
                }
            case .waitForNotice(let until):
                notices.wait(key, until: until, now: clock.now())
                action = flight.noticed()
            case .present(let written, let attempt, let token):
                // Until the outcome is known, this replica does not serve the token being replaced.
                cache.put(written, now: clock.now())
                // The database server changed since the start was decided: the attempt may sit on
                // a row the new server rolled back, over a token already spent. Not presented;
                // the attempt is cleared as one that never reached the IdP.
                let moved = (failover?.epoch ?? 0) != epoch
                let outcome = moved ? .failed(.notSent("the database server changed before the refresh token was presented"))
                    : present(token, row: row ?? written, client: client)
                let f = complete(PendingAnswers.Answer(key: key, client: client, attempt: attempt, presented: token,
                                                       sentAt: attempt.startedAt, outcome: outcome), seen: written)
                if !moved { circuits.report(circuit, f.health, now: clock.now()) }
                action = flight.answered(f)
            case .resolve(let attempt, let presented):
                action = flight.resolved(resolve(key, client, attempt, token: presented))
            case .end(let ending):
                return ending
            }
        }
    }

    /// Decides the refresh machine's start and writes it, guarded as the flight says; nil when a
    /// compare-and-set start is one it does not write (left to the lock).
    private func start(_ key: SessionKey, _ how: RefreshFlight.Guard, _ trigger: RefreshTrigger, _ ctx: RefreshContext,
                       read: Session?) throws -> (RefreshStart, Session)? {
        var rng = SystemRandomNumberGenerator()
        let attemptID = "att_" + Identifiers.token(bytes: 12, using: &rng)
        switch how {
        case .compareAndSet:
            guard let row = try read ?? store.session(tenant: key.tenant, id: key.id) else { throw BrokerError.notFound("session") }
            let start = RefreshMachine.start(row, trigger, ctx, attemptID: attemptID)
            switch start.compareAndSet {
            case .nothing: return (start, row)
            case .write(let w):
                return try journaled(key) {
                    guard try store.writeIfUnchanged(w, over: row) else { throw BrokerError.refreshBusy }
                    return ((start, row), w, row)
                }
            case .declined: return nil
            }
        case .lock(let timeout):
            return try journaled(key) {
                try store.withRefreshLockQueuing(tenant: key.tenant, id: key.id, timeout: timeout) { row in
                    let start = RefreshMachine.start(row, trigger, ctx, attemptID: attemptID)
                    return (start.write, [], ((start, row), start.write, row))
                }
            }
        }
    }
}
