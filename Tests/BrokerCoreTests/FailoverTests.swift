import BrokerCore
import Foundation
import Testing

/// The decisions that keep a failover from losing rotations: which server a replica is on,
/// when it may refresh again, what its journal keeps, and what it writes again.
@Suite("Failover: server identity, fence, journal, re-application")
struct FailoverTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let primary = ServerIdentity(systemID: "7716288583980274036", timeline: 1)

    func row(version: Int64, refreshToken: String? = "rt-1", attempt: RefreshAttempt? = nil, state: SessionState = .active) -> Session {
        Session(tenant: "t", id: "s", client: "c", subject: "u", issuer: "https://i", scopes: ["openid"], accessToken: "at-\(version)",
                accessExpiresAt: t0 + 300, refreshToken: refreshToken, state: state, nextRefreshAt: t0 + 240, version: version,
                grantedAt: t0 - 86_400, createdAt: t0 - 86_400, lastUsedAt: t0 - 5, attempt: attempt)
    }

    // MARK: identity and fence

    @Test("a restart of the same primary (same system, same timeline) is no change; a promotion (new timeline) or another cluster is")
    func identityChange() {
        #expect(!primary.isOtherServer(than: ServerIdentity(systemID: "7716288583980274036", timeline: 1)))
        #expect(primary.isOtherServer(than: ServerIdentity(systemID: "7716288583980274036", timeline: 2)))
        #expect(primary.isOtherServer(than: ServerIdentity(systemID: "1", timeline: 1)))
        #expect(!primary.isOtherServer(than: ServerIdentity(systemID: nil, timeline: 1)))   // unreadable: not compared
    }

    @Test("the fence holds refreshes from a change until the re-application is done and the hold has passed")
    func fenceHolds() {
        var f = FailoverFence(hold: 5)
        #expect(f.observe(primary, now: t0) == .first && f.heldUntil(now: t0) == nil)
        #expect(f.observe(primary, now: t0 + 1) == .same && f.epoch == 0)
        let promoted = ServerIdentity(systemID: primary.systemID, timeline: 2)
        #expect(f.observe(promoted, now: t0 + 10) == .changed(from: primary) && f.epoch == 1)
        #expect(f.heldUntil(now: t0 + 20) == .distantFuture)   // not re-applied yet: held however long it takes
        f.reconciled(epoch: 1)
        #expect(f.heldUntil(now: t0 + 12) == t0 + 15)           // re-applied, the others still have time
        #expect(f.heldUntil(now: t0 + 15) == nil)
        #expect(f.observe(promoted, now: t0 + 30) == .same)     // the same new primary, reconnected
    }

    @Test("a re-application of an earlier change does not open the fence of a later one")
    func fenceLaterChange() {
        var f = FailoverFence(hold: 0)
        _ = f.observe(primary, now: t0)
        _ = f.observe(ServerIdentity(systemID: primary.systemID, timeline: 2), now: t0 + 1)
        _ = f.observe(ServerIdentity(systemID: primary.systemID, timeline: 3), now: t0 + 2)
        f.reconciled(epoch: 1)
        #expect(!f.isReconciled && f.heldUntil(now: t0 + 3) == .distantFuture)
        f.reconciled(epoch: 2)
        #expect(f.heldUntil(now: t0 + 3) == nil)
    }

    @Test("after a change, a token is introspected before it is presented unless this replica committed it or the session was refreshed since; never past the window")
    func fenceProof() {
        var f = FailoverFence(hold: 5, proofWindow: 3600)
        #expect(!f.mustProve(lastRefreshedAt: nil, tokenKnown: false, now: t0))   // no change seen
        _ = f.observe(primary, now: t0)
        _ = f.observe(ServerIdentity(systemID: primary.systemID, timeline: 2), now: t0 + 10)
        #expect(f.mustProve(lastRefreshedAt: t0 - 600, tokenKnown: false, now: t0 + 20))
        #expect(!f.mustProve(lastRefreshedAt: t0 - 600, tokenKnown: true, now: t0 + 20))
        #expect(!f.mustProve(lastRefreshedAt: t0 + 16, tokenKnown: false, now: t0 + 20))
        #expect(!f.mustProve(lastRefreshedAt: t0 - 600, tokenKnown: false, now: t0 + 3611))
        #expect(!FailoverFence(hold: 5).mustProve(lastRefreshedAt: nil, tokenKnown: false, now: t0))   // window 0: never
    }

    @Test("a recorded attempt whose token introspection found replaced ends the session without presenting it; the attempt is cleared")
    func superseded() {
        let a = RefreshAttempt(id: "a1", startedAt: t0)
        let f = RefreshMachine.superseded(row(version: 8, attempt: a), attempt: a)
        #expect(f.write?.state == .needsReauth && f.write?.reason == "refresh_token_superseded" && f.write?.attempt == nil && f.write?.version == 9)
        #expect(f.result == .failure(.sessionNotActive(.needsReauth)) && f.revoke.isEmpty && f.event?.code == "refresh_token_superseded")
        // Somebody else's attempt meanwhile: left alone.
        #expect(RefreshMachine.superseded(row(version: 9, attempt: RefreshAttempt(id: "b", startedAt: t0)), attempt: a).write == nil)
    }

    // MARK: journal

    @Test("the journal keeps a session's latest write, and a rotation survives a later write over the rolled-back token")
    func journalKeepsRotation() {
        var j = RotationJournal<String>(limits: .init(maxAge: 300, maxEntries: 10, maxBytes: 10_000))
        let k = RotationJournal<String>.Key(tenant: "t", id: "s")
        j.record(k, version: 8, tokenHash: 1, rotation: false, bytes: 10, payload: "attempt on rt-1", now: t0)
        j.record(k, version: 9, tokenHash: 2, rotation: true, bytes: 10, payload: "rotation to rt-2", now: t0 + 1)
        #expect(j.entry(k, now: t0 + 2)?.payload == "rotation to rt-2" && j.count == 1 && j.bytes == 10)
        // The new server rolled the row back to rt-1: an attempt written over it must not hide rt-2.
        let kept = j.record(k, version: 8, tokenHash: 1, rotation: false, bytes: 10, payload: "attempt on rt-1 again", now: t0 + 3)
        #expect(!kept)
        #expect(j.entry(k, now: t0 + 4)?.payload == "rotation to rt-2")
        // Later writes on rt-2 (a backoff, an attempt) replace it; the next rotation too.
        let replaced = j.record(k, version: 10, tokenHash: 2, rotation: false, bytes: 10, payload: "attempt on rt-2", now: t0 + 5)
        #expect(replaced && j.entry(k, now: t0 + 5)?.payload == "attempt on rt-2")
        #expect(j.received(k, tokenHash: 2, now: t0 + 5) && !j.received(k, tokenHash: 1, now: t0 + 5))
        #expect(j.entry(k, now: t0 + 400) == nil)   // older than maxAge
        // An attempt recorded on a token this replica did not receive does not make it "received".
        var other = RotationJournal<String>(limits: .init())
        other.record(k, version: 3, tokenHash: 7, rotation: false, bytes: 1, payload: "attempt", now: t0)
        #expect(!other.received(k, tokenHash: 7, now: t0))
    }

    @Test("the journal is bounded by age, entries and bytes, the oldest dropped first")
    func journalBounded() {
        var j = RotationJournal<Int>(limits: .init(maxAge: 60, maxEntries: 3, maxBytes: 250))
        for i in 0..<5 {
            j.record(.init(tenant: "t", id: "s\(i)"), version: 1, tokenHash: i, rotation: true, bytes: 100, payload: i, now: t0 + Double(i))
        }
        #expect(j.count == 2 && j.bytes == 200 && j.current(now: t0 + 5).map(\.payload) == [3, 4] && j.evictedEarly == 3)
        j.evict(now: t0 + 63.5)
        #expect(j.current(now: t0 + 63.5).map(\.payload) == [4] && j.count == 1)
    }

    // MARK: re-application

    @Test("a rotation the new server lacks (older version, spent token) is re-applied at the committed version")
    func reapplyLostRotation() throws {
        let committed = row(version: 9, refreshToken: "rt-2")
        let d = FailoverReapply.decide(row(version: 7, refreshToken: "rt-1"), committed: committed, replaced: "rt-1")
        #expect(d.verdict == .reapplied && d.revoke.isEmpty)
        let w = try #require(d.write)
        #expect(w.refreshToken == "rt-2" && w.accessToken == "at-9" && w.version == 9 && w.attempt == nil)
    }

    @Test("a re-applied rotation keeps its access token's certificate binding: the bound token is not handed out as unbound")
    func reapplyKeepsCertificateBinding() throws {
        var committed = row(version: 9, refreshToken: "rt-2")
        committed.certificateBinding = "x5t-new"
        var older = row(version: 7, refreshToken: "rt-1")
        older.certificateBinding = nil
        let w = try #require(FailoverReapply.decide(older, committed: committed, replaced: "rt-1").write)
        #expect(w.certificateBinding == "x5t-new")
    }

    @Test("writes made on the new server over the rolled-back row do not hide the lost rotation: re-applied above them")
    func reapplyOverNewerVersionOfSpentToken() throws {
        let newer = row(version: 10, refreshToken: "rt-1")   // a backoff written there, still the spent token
        let d = FailoverReapply.decide(newer, committed: row(version: 9, refreshToken: "rt-2"), replaced: "rt-1")
        #expect(d.verdict == .reapplied && d.write?.version == 11 && d.write?.refreshToken == "rt-2")
    }

    @Test("a lost attempt record is re-applied: nobody presents its token while it stands")
    func reapplyLostAttempt() {
        let a = RefreshAttempt(id: "a1", startedAt: t0)
        let d = FailoverReapply.decide(row(version: 7), committed: row(version: 8, attempt: a), replaced: nil)
        #expect(d.verdict == .reapplied && d.write?.attempt == a && d.write?.version == 8)
    }

    @Test("nothing newer is overwritten: the same write is current, a later token moved on")
    func reapplyNeverOverwritesNewer() {
        let committed = row(version: 9, refreshToken: "rt-2")
        #expect(FailoverReapply.decide(row(version: 9, refreshToken: "rt-2"), committed: committed, replaced: "rt-1")
                == .init(verdict: .current, write: nil, revoke: []))
        #expect(FailoverReapply.decide(row(version: 12, refreshToken: "rt-3"), committed: committed, replaced: "rt-1")
                == .init(verdict: .movedOn, write: nil, revoke: []))
        // A later attempt of another replica on the committed token is newer too.
        let a = RefreshAttempt(id: "b", startedAt: t0)
        #expect(FailoverReapply.decide(row(version: 10, refreshToken: "rt-2", attempt: a), committed: committed, replaced: "rt-1").write == nil)
    }

    @Test("a session revoked (or ended) on the new server stays ended; the committed refresh token it never received is revoked")
    func reapplyNeverRevives() {
        var revoked = row(version: 8, refreshToken: nil, state: .revoked)
        revoked.accessToken = nil
        let d = FailoverReapply.decide(revoked, committed: row(version: 9, refreshToken: "rt-2"), replaced: "rt-1")
        #expect(d == .init(verdict: .ended, write: nil, revoke: ["rt-2"]))
        let ended = FailoverReapply.decide(row(version: 8, refreshToken: "rt-1", state: .needsReauth), committed: row(version: 9, refreshToken: "rt-2"),
                                           replaced: "rt-1")
        #expect(ended.write == nil && ended.revoke == ["rt-2"])
    }

    @Test("a row that moved on to another token on the new server is never written over, whatever its version (versions do not compare across servers)")
    func reapplyNeverOverAnotherToken() {
        // Committed here: backoffs on rt-0 up to version 7. On the new server another replica
        // rotated rt-0 -> rt-2 at version 6: writing rt-0 back would bring back a spent token.
        let committed = row(version: 7, refreshToken: "rt-0")
        #expect(FailoverReapply.decide(row(version: 6, refreshToken: "rt-2"), committed: committed, replaced: nil)
                == .init(verdict: .movedOn, write: nil, revoke: []))
        // Likewise a lost rotation rt-1 -> rt-3 over a row rotated elsewhere to rt-2.
        #expect(FailoverReapply.decide(row(version: 5, refreshToken: "rt-2"), committed: row(version: 9, refreshToken: "rt-3"), replaced: "rt-1")
                == .init(verdict: .movedOn, write: nil, revoke: []))
        // A row on the same token recording another replica's attempt: a refresh is in flight there.
        let b = RefreshAttempt(id: "b", startedAt: t0)
        #expect(FailoverReapply.decide(row(version: 5, refreshToken: "rt-0", attempt: b), committed: committed, replaced: nil).write == nil)
        // The same token at an older version is still re-applied.
        #expect(FailoverReapply.decide(row(version: 5, refreshToken: "rt-0"), committed: committed, replaced: nil).verdict == .reapplied)
        // A row still on the replaced token lacks the rotation, whatever attempt it records.
        #expect(FailoverReapply.decide(row(version: 5, refreshToken: "rt-1", attempt: b), committed: row(version: 9, refreshToken: "rt-3"),
                                       replaced: "rt-1").write?.refreshToken == "rt-3")
    }

    @Test("a start reads the fence and the epoch together, and presents only while the fence is open for that epoch")
    func fenceAdmission() {
        var f = FailoverFence(hold: 5)
        _ = f.observe(primary, now: t0)
        let start = f.admission(now: t0)
        #expect(start.held == nil && start.epoch == 0 && f.admits(epoch: 0, now: t0))
        // The server changes after the start was admitted: its presentation is refused, and a
        // start admitted now is held, in the new epoch.
        _ = f.observe(ServerIdentity(systemID: primary.systemID, timeline: 2), now: t0 + 1)
        #expect(!f.admits(epoch: 0, now: t0 + 1))
        let after = f.admission(now: t0 + 1)
        #expect(after.held == .distantFuture && after.epoch == 1 && !f.admits(epoch: 1, now: t0 + 1))
        f.reconciled(epoch: 1)
        #expect(!f.admits(epoch: 1, now: t0 + 2) && f.admits(epoch: 1, now: t0 + 7) && !f.admits(epoch: 0, now: t0 + 7))
    }

    @Test("a server in recovery (a standby) reports no identity: its restartpoint's timeline lags a promotion")
    func noIdentityInRecovery() {
        #expect(ServerIdentity.reported(systemID: primary.systemID, timeline: 1, inRecovery: true) == nil)
        #expect(ServerIdentity.reported(systemID: primary.systemID, timeline: 2, inRecovery: false) == ServerIdentity(systemID: primary.systemID, timeline: 2))
    }

    @Test("the journal's clock stops while this replica is out of touch with its server: a long failover does not age out what it must re-apply")
    func journalTimeStopsOutOfTouch() {
        var f = FailoverFence(hold: 5)
        _ = f.observe(primary, now: t0)
        _ = f.observe(primary, now: t0 + 2)
        #expect(f.journalTime(t0 + 3) == t0 + 3)
        // Last read on the old server at t0+2; the new one found ten minutes later.
        _ = f.observe(ServerIdentity(systemID: primary.systemID, timeline: 2), now: t0 + 602)
        #expect(f.journalTime(t0 + 603) == t0 + 3)
    }

    @Test("a re-applied end (the session's token erased) or a write that kept the token is not counted as a rotation")
    func reapplyCountsRotations() {
        #expect(FailoverReapply.isRotation(row(version: 9, refreshToken: "rt-2"), replaced: "rt-1"))
        #expect(!FailoverReapply.isRotation(row(version: 9, refreshToken: "rt-2"), replaced: nil))
        #expect(!FailoverReapply.isRotation(row(version: 9, refreshToken: nil, state: .needsReauth), replaced: "rt-1"))
    }
}
