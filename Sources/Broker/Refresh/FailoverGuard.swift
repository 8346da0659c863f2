import BrokerCore
import Foundation
import Synchronization

/// FailoverGuard keeps what this replica needs to lose no rotation to a failover: the server
/// its connections are on (FailoverFence, fed by the pool and the change feed with every
/// identity they read), and the rows it committed in refreshes lately (RotationJournal),
/// sealed with the sealing key under the context `failover-journal/<tenant>/<id>/<column>`:
/// no token stays in memory in the clear for longer than a write or a re-application takes.
///
/// When the server changes, the refresh driver re-applies the journal (RefreshDriver+Failover)
/// and holds refreshes until the fence opens. The journal ages on the fence's journal time
/// (FailoverFence.journalTime): not while this replica was out of touch with its server.
///
/// Thread-safety: any thread (`busyKeys` is guarded by `busy`).
public final class FailoverGuard: @unchecked Sendable {
    /// A committed row with its secrets sealed: the journal's payload.
    struct SealedRow: Sendable {
        /// The row without token material (tokens nil, no DPoP key).
        let row: Session
        let accessToken: [UInt8]?
        let refreshToken: [UInt8]?
        let idToken: [UInt8]?
        /// The refresh token the row's rotation replaced.
        let replaced: [UInt8]?
    }

    private let sealer: any Sealer
    private let fence: Mutex<FailoverFence>
    private let journal: Mutex<RotationJournal<SealedRow>>
    /// Wakes refreshes held by the fence when a re-application ends.
    private let opened = NSCondition()
    /// Sessions whose refresh write (and its journal record) or re-application is under way:
    /// one at a time per session, so that a re-application never reads an entry older than a
    /// write it sees committed. Other sessions never wait for it.
    private let busy = NSCondition()
    private var busyKeys = Set<SessionKey>()
    /// Reads the server's identity on a pooled connection and reports it (`observed`): run
    /// after a refresh's start was written and before its token is presented.
    private let confirmer = Mutex<(@Sendable () throws -> Void)?>(nil)
    /// Told of each change of server (the driver starts its re-application).
    private let changed = Mutex<(@Sendable (Int) -> Void)?>(nil)
    private let events: @Sendable (LogLine) -> Void
    /// Server changes seen, and the committed writes re-applied after them.
    public let serverChanges = Counter()
    public let reapplied = Counter()
    /// Of those, the refresh-token rotations.
    public let rotationsReapplied = Counter()
    /// Committed refresh tokens revoked because the session ended on the new server meanwhile.
    public let revokedAfterChange = Counter()

    private let clock: any Clock
    /// Whether anything is kept at all (TOKENBROKER_FAILOVER_JOURNAL_SECONDS or a bound at 0: no).
    private let journalOn: Bool

    /// `proofWindow`: how long after a change a refresh token this replica cannot prove current
    /// is checked by introspection before it is presented (FailoverFence.mustProve; 0: never).
    public init(sealer: any Sealer, clock: any Clock, limits: RotationJournalLimits = .init(), hold: TimeInterval = 5,
                proofWindow: TimeInterval = 0, events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.sealer = sealer
        self.clock = clock
        fence = Mutex(FailoverFence(hold: hold, proofWindow: proofWindow))
        journal = Mutex(RotationJournal(limits: limits))
        journalOn = limits.maxAge > 0 && limits.maxEntries > 0 && limits.maxBytes > 0
        self.events = events
    }

    /// The server this replica is on, as last read.
    public var server: ServerIdentity? { fence.withLock { $0.server } }
    public var epoch: Int { fence.withLock { $0.epoch } }
    /// Entries and bytes the journal holds now, and entries it dropped before their age.
    public var journalUsage: (entries: Int, bytes: Int, evictedEarly: Int) {
        journal.withLock { ($0.count, $0.bytes, $0.evictedEarly) }
    }

    func onChange(_ handler: @escaping @Sendable (Int) -> Void) { changed.withLock { $0 = handler } }

    /// How a refresh confirms, before presenting, which server its start was written on (a
    /// pooled identity read, PGPool.probeIdentity). Behind a transaction pooler the client
    /// connections survive a failover and no new connection reads the identity: without this
    /// the change would be found only by the periodic probe, seconds after starts were written
    /// on the new server and their spent tokens presented.
    public func confirmWith(_ read: @escaping @Sendable () throws -> Void) { confirmer.withLock { $0 = read } }

    /// Reads the server's identity now (reporting a change as any read does); false when it
    /// could not be read: then nothing is presented.
    func confirmServer() -> Bool {
        guard let read = confirmer.withLock({ $0 }) else { return true }
        do { try read(); return true } catch { return false }
    }

    /// An identity read on a connection (pooled, or the change feed's), before the connection
    /// is used. A change is logged once, counted, and handed to the driver.
    public func observed(_ identity: ServerIdentity) {
        let now = clock.now()
        let (o, epoch) = fence.withLock { f in (f.observe(identity, now: now), f.epoch) }
        guard case .changed(let was) = o else { return }
        serverChanges.add()
        events(LogLine(tenant: "", client: "", session: nil, event: RefreshEvent(.warn, "database_server_changed",
            "the database is another server than the one this replica committed to (\(was) -> \(identity)); refreshes are held while this replica re-applies what it committed lately")))
        changed.withLock { $0 }?(epoch)
    }

    /// Until when refreshes are held at `now`, nil when they may go.
    public func heldUntil(now: Date) -> Date? { fence.withLock { $0.heldUntil(now: now) } }

    /// Until when refreshes are held at `now`, and the epoch, in one read (FailoverFence.admission).
    func admission(now: Date) -> (held: Date?, epoch: Int) { fence.withLock { $0.admission(now: now) } }

    /// Whether a refresh started in `epoch` may present its token at `now` (FailoverFence.admits).
    func admits(epoch: Int, now: Date) -> Bool { fence.withLock { $0.admits(epoch: epoch, now: now) } }

    /// Whether the re-application for the current epoch is done.
    var isReconciled: Bool { fence.withLock { $0.isReconciled } }

    /// Blocks until the fence opens or `until` (on `clock`), whichever first.
    func waitOpen(until: Date, clock: any Clock) {
        let end = Date().addingTimeInterval(until.timeIntervalSince(clock.now()))
        opened.lock()
        defer { opened.unlock() }
        while let held = heldUntil(now: clock.now()) {
            let wake = min(end, Date().addingTimeInterval(held.timeIntervalSince(clock.now())))
            guard wake > Date() else { return }
            _ = opened.wait(until: wake)
        }
    }

    /// Whether `row`'s refresh token, about to be presented, must be checked by introspection
    /// first (FailoverFence.mustProve).
    func mustProve(_ row: Session, now: Date) -> Bool {
        // Without a recent change (almost always) the journal is not even looked at.
        guard fence.withLock({ $0.mustProve(lastRefreshedAt: row.lastRefreshedAt, tokenKnown: false, now: now) }) else { return false }
        // A token this replica received itself (not merely found in the row, as an attempt it
        // just recorded does) is proven.
        let at = journalTime(now)
        return !journal.withLock { $0.received(.init(tenant: row.tenant, id: row.id), tokenHash: Self.hash(row.refreshToken), now: at) }
    }

    /// The journal's clock at `now` (FailoverFence.journalTime: stopped while out of touch).
    private func journalTime(_ now: Date) -> Date { fence.withLock { $0.journalTime(now) } }

    /// The re-application for `epoch` is done.
    func reconciled(epoch: Int) {
        fence.withLock { $0.reconciled(epoch: epoch) }
        opened.lock()
        opened.broadcast()
        opened.unlock()
    }

    /// Runs `body` alone for `key`: a refresh's write and its journal record, or a
    /// re-application.
    func serialized<T>(_ key: SessionKey, _ body: () throws -> T) rethrows -> T {
        busy.lock()
        while busyKeys.contains(key) { busy.wait() }
        busyKeys.insert(key)
        busy.unlock()
        defer {
            busy.lock()
            busyKeys.remove(key)
            busy.broadcast()
            busy.unlock()
        }
        return try body()
    }

    /// Keeps `written`, committed over `before`, in the journal (sealed). A row that cannot be
    /// sealed is not kept: the journal is a safety net, never a reason to fail a refresh.
    func record(_ written: Session, over before: Session, now real: Date) {
        guard journalOn else { return }
        let now = journalTime(real)
        let rotation = written.refreshToken != before.refreshToken
        let k = RotationJournal<SealedRow>.Key(tenant: written.tenant, id: written.id)
        let previous = rotation ? nil : journal.withLock { $0.entry(k, now: now) }
        guard let sealed = try? seal(written, replaced: rotation ? before.refreshToken : nil, keeping: previous?.payload.replaced) else { return }
        let size = 512 + [sealed.accessToken, sealed.refreshToken, sealed.idToken, sealed.replaced].reduce(0) { $0 + ($1?.count ?? 0) }
            + (written.metadata?.utf8.count ?? 0)
        journal.withLock {
            _ = $0.record(k, version: written.version, tokenHash: Self.hash(written.refreshToken), rotation: rotation, bytes: size,
                          payload: sealed, now: now)
        }
    }

    /// `attempt` was recorded but its token never presented (the server changed first): the
    /// journal keeps the row without it, so that a re-application does not restore an attempt
    /// nobody is waiting for (the session would wait out its patience for nothing).
    func abandoned(_ key: SessionKey, attempt: RefreshAttempt) {
        journal.withLock {
            $0.amend(.init(tenant: key.tenant, id: key.id)) { p in
                guard p.row.attempt?.id == attempt.id else { return p }
                var row = p.row
                row.attempt = nil
                return SealedRow(row: row, accessToken: p.accessToken, refreshToken: p.refreshToken, idToken: p.idToken, replaced: p.replaced)
            }
        }
    }

    /// The journal's entries at `now`, oldest first (still sealed).
    func entries(now real: Date) -> [SessionKey] {
        let now = journalTime(real)
        return journal.withLock { $0.current(now: now).map { SessionKey(tenant: $0.key.tenant, id: $0.key.id) } }
    }

    /// `key`'s committed row unsealed, with the refresh token its rotation replaced; nil when
    /// the journal no longer holds it, or it does not open.
    func committed(_ key: SessionKey, now real: Date) -> (row: Session, replaced: String?)? {
        let now = journalTime(real)
        guard let e = journal.withLock({ $0.entry(.init(tenant: key.tenant, id: key.id), now: now) }) else { return nil }
        let p = e.payload
        do {
            var row = p.row
            row.accessToken = try open(p.accessToken, row, "access_token")
            row.refreshToken = try open(p.refreshToken, row, "refresh_token")
            row.idToken = try open(p.idToken, row, "id_token")
            return (row, try open(p.replaced, row, "replaced"))
        } catch {
            return nil
        }
    }

    /// A per-process hash of a refresh token (never leaves memory, compares entries only).
    static func hash(_ token: String?) -> Int {
        var h = Hasher()
        h.combine(token)
        return h.finalize()
    }

    private func seal(_ s: Session, replaced: String?, keeping: [UInt8]?) throws -> SealedRow {
        let bare = Session(tenant: s.tenant, id: s.id, client: s.client, subject: s.subject, issuer: s.issuer, scopes: s.scopes,
                           claims: s.claims, accessToken: nil, accessExpiresAt: s.accessExpiresAt, accessLifetime: s.accessLifetime,
                           refreshToken: nil, idToken: nil, state: s.state, nextRefreshAt: s.nextRefreshAt, version: s.version,
                           failureCount: s.failureCount, lastError: s.lastError, grantedAt: s.grantedAt, createdAt: s.createdAt,
                           lastUsedAt: s.lastUsedAt, lastRefreshedAt: s.lastRefreshedAt, attempt: s.attempt, backoffUntil: s.backoffUntil,
                           reason: s.reason, grantExpiresAt: s.grantExpiresAt, accessTokenType: s.accessTokenType, dpopKey: nil,
                           metadata: s.metadata, endUser: s.endUser, certificateBinding: s.certificateBinding)
        return SealedRow(row: bare, accessToken: try sealed(s.accessToken, s, "access_token"),
                         refreshToken: try sealed(s.refreshToken, s, "refresh_token"), idToken: try sealed(s.idToken, s, "id_token"),
                         replaced: try replaced.map { try sealer.seal($0, context: context(s, "replaced")) } ?? keeping)
    }

    private func sealed(_ value: String?, _ s: Session, _ column: String) throws -> [UInt8]? {
        try value.map { try sealer.seal($0, context: context(s, column)) }
    }

    private func open(_ value: [UInt8]?, _ s: Session, _ column: String) throws -> String? {
        try value.map { try sealer.open($0, context: context(s, column)) }
    }

    private func context(_ s: Session, _ column: String) -> String { "failover-journal/\(s.tenant)/\(s.id)/\(column)" }
}
