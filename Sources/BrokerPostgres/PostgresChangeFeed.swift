import BrokerCore
import Foundation
import Synchronization

/// PostgresChangeFeed carries Change values between replicas over LISTEN/NOTIFY on the channel
/// `tokenbroker_changes`. Payloads hold ids only (never tokens): `s|tenant|id`, `k|id`,
/// `c|tenant|id`, `t|tenant`, `u|tenant|client|subject`, `n|tenant|id|client|epoch-or-empty`.
///
/// A dedicated connection listens on its own thread; when it breaks it reconnects and delivers
/// `.resync`, since notifications sent meanwhile are lost. LISTEN is session state, so that
/// connection goes to `listenURL`, straight to PostgreSQL even when the pool goes through a
/// transaction pooler (which would hand the notifications to whichever client holds the server
/// connection); NOTIFY is sent through the pool, inside the writing transaction.
///
/// The feed proves itself alive: `probe()`, every `canaryPeriod`, sends this replica a canary
/// (`a|replica|number`, which other replicas ignore) and checks that the earlier ones came back
/// (CanaryWatch: within `canaryBound`). A listening connection that breaks is seen at once; one
/// that LISTENs where nothing is delivered — through a transaction pooler, say — only this way.
/// A connection opened again counts as delivering only once a canary came back through it.
public final class PostgresChangeFeed: ChangeFeed, @unchecked Sendable {
    static let channel = "tokenbroker_changes"
    /// How long a busy feed lets notices gather between reads.
    static let gather: TimeInterval = 0.02

    /// Whether the feed is busy: more than `quiet` reads that brought notices within the
    /// current second. Then it is read at most about 50 more times in that second.
    struct BusyFeed {
        static let quiet = 50
        private var since = Date.distantPast
        private var reads = 0

        /// Counts a read that brought notices at `now`; true when the feed is busy.
        mutating func read(at now: Date) -> Bool {
            if now.timeIntervalSince(since) >= 1 { since = now; reads = 0 }
            reads += 1
            return reads > Self.quiet
        }
    }
    /// How often a replica sends itself a canary, and how long one may take to come back.
    public static let canaryPeriod: TimeInterval = 2
    public static let canaryBound: TimeInterval = 3 * canaryPeriod
    private let pool: PGPool
    private let listenURL: String
    private let publishFailed: @Sendable (Change, any Error) -> Void
    private let verdicts: @Sendable (CanaryWatch.Verdict) -> Void
    private let identities: (@Sendable (ServerIdentity) -> Void)?
    private let stopped = NSCondition()
    private var stopping = false
    /// This replica's canaries: its own name (random, per process) and what came back.
    private let canaryName = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    private let canaries = Mutex(CanaryWatch(bound: canaryBound))

    /// `publishFailed` hears of every notice that could not be sent (the composition root logs
    /// it); `verdicts` of the feed found dead, and alive again (after a `.resync` to the
    /// subscriber: what was cached meanwhile may have missed a change); `identities`, the
    /// server identity of each listening connection (FailoverGuard), read before it LISTENs.
    public init(pool: PGPool, listenURL: String, publishFailed: @escaping @Sendable (Change, any Error) -> Void = { _, _ in },
                verdicts: @escaping @Sendable (CanaryWatch.Verdict) -> Void = { _ in },
                identities: (@Sendable (ServerIdentity) -> Void)? = nil) {
        self.identities = identities
        self.pool = pool
        self.listenURL = listenURL
        self.publishFailed = publishFailed
        self.verdicts = verdicts
    }

    /// Whether the feed delivers: no canary overdue.
    public var isAlive: Bool { canaries.withLock { $0.alive } }

    /// Checks the canaries sent so far, then sends the next one (its time taken once a
    /// connection is in hand, so a busy pool does not make it look late). Call it every
    /// `canaryPeriod`.
    public func probe() {
        if let v = canaries.withLock({ $0.check(at: Date()) }) { verdicts(v) }
        var number: Int?
        do {
            try pool.withConnection { c in
                let n = canaries.withLock { $0.send(at: Date()) }
                number = n
                try c.execute("SELECT pg_notify(\(Self.channel), \("a|" + canaryName + "|" + String(n)))")
            }
        } catch {
            if let n = number { canaries.withLock { $0.unsent(n) } }
        }
    }

    /// The canary number in `payload` when it is one of this replica's; nil for anything else.
    private func ownCanary(_ payload: String) -> Int? {
        let prefix = "a|" + canaryName + "|"
        return payload.hasPrefix(prefix) ? Int(payload.dropFirst(prefix.count)) : nil
    }

    /// Announces a change to every replica: to this one's subscriber at once, in the caller's
    /// thread (what this replica wrote, it reads next, whatever the listener is doing), and to
    /// every replica's, this one's again, through NOTIFY (the handlers are idempotent). A
    /// notice that cannot be sent is reported to `publishFailed` and not retried: the change is
    /// committed, and replicas catch up within TOKENBROKER_CACHE_MAX_AGE_SECONDS (caches) and the
    /// engine's next load (schedules) — a caller must not fail for it.
    public func publish(_ change: Change) {
        local.withLock { $0 }?.handler(change)
        do {
            try pool.withConnection { c in try c.execute("SELECT pg_notify(\(Self.channel), \(Self.encode(change)))") }
        } catch {
            publishFailed(change, error)
        }
    }

    /// This replica's subscriber, for the changes it publishes itself. In a class: a closure
    /// kept in a `Mutex` came out of it wrapped in one more pair of reabstraction thunks at
    /// every read (gdb: a chain of them), and 10,000 imports overflowed an HTTP thread's stack.
    private final class Subscriber: Sendable {
        let handler: @Sendable (Change) -> Void
        init(_ handler: @escaping @Sendable (Change) -> Void) { self.handler = handler }
    }
    private let local = Mutex<Subscriber?>(nil)

    public func subscribe(_ handler: @escaping @Sendable (Change) -> Void) {
        local.withLock { $0 = Subscriber(handler) }
        let t = Thread { [self] in listen(handler) }
        t.name = "change-feed"
        t.start()
    }

    /// Stops listening (at shutdown).
    public func stop() {
        stopped.lock()
        stopping = true
        stopped.unlock()
    }

    private var isStopping: Bool {
        stopped.lock()
        defer { stopped.unlock() }
        return stopping
    }

    private func listen(_ handler: @escaping @Sendable (Change) -> Void) {
        var first = true
        while !isStopping {
            do {
                let c = try PGConnection(url: listenURL)
                // Unreadable: this connection is not used (reconnected like any failure).
                if let identities, let id = try c.serverIdentity() { identities(id) }
                try c.execute("LISTEN \(raw: Self.channel)")
                // Opened again (after an outage, or on a promoted standby): unproven until a
                // canary comes back through it, sent now rather than at the next period.
                if let v = canaries.withLock({ $0.listening(again: !first) }) { verdicts(v) }
                if !first {
                    handler(.resync)
                    DispatchQueue.global().async { [self] in probe() }
                }
                first = false
                var busy = BusyFeed()
                while !isStopping {
                    var pfd = pollfd(fd: c.socket, events: Int16(POLLIN), revents: 0)
                    _ = poll(&pfd, 1, 500)
                    let notices = try c.notifications()
                    for n in notices {
                        if n.payload.hasPrefix("a|") {
                            guard let number = ownCanary(n.payload), let v = canaries.withLock({ $0.delivered(number) }) else { continue }
                            handler(.resync)
                            verdicts(v)
                        } else if let change = Self.decode(n.payload) { handler(change) }
                    }
                    // A busy feed is read in gulps: what arrives within `gather` of a read waits
                    // for the next one instead of waking this thread once each (every replica
                    // hears every write of the fleet: two a refresh). A quiet feed is read at
                    // once: an operator's change reaches every replica as soon as it can.
                    if !notices.isEmpty, busy.read(at: Date()) { Thread.sleep(forTimeInterval: Self.gather) }
                }
            } catch {
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    static func encode(_ c: Change) -> String {
        switch c {
        case .session(let t, let id): "s|\(t)|\(id)"
        case .apiKey(let id): "k|\(id)"
        case .client(let t, let id): "c|\(t)|\(id)"
        case .tenant(let t): "t|\(t)"
        case .subject(let t, let client, let subject): "u|\(t)|\(client)|\(subject)"
        case .endUser(let t, let client, let endUser): "e|\(t)|\(client)|\(endUser)"
        case .dpopNonce(let t, let client): "d|\(t)|\(client)"
        case .resync: "r"
        case .scheduled(let t, let id, let client, let at, let v):
            "n|\(t)|\(id)|\(client)|\(at.map { String($0.timeIntervalSince1970) } ?? "")|\(v.map { String($0) } ?? "")"
        }
    }

    static func decode(_ p: String) -> Change? {
        // Split on the bytes: every replica decodes every write's notice (Character splitting
        // was a third of the listener's CPU in the refresh storm).
        var p = p
        let f = p.withUTF8 { u -> [String] in
            let limit = u.starts(with: "n|".utf8) ? 5 : 3
            var fields: [String] = []
            var start = 0
            for i in u.indices where u[i] == UInt8(ascii: "|") && fields.count < limit {
                fields.append(String(decoding: UnsafeBufferPointer(rebasing: u[start..<i]), as: UTF8.self))
                start = i + 1
            }
            fields.append(String(decoding: UnsafeBufferPointer(rebasing: u[start...]), as: UTF8.self))
            return fields
        }
        switch (f.first, f.count) {
        case ("s", 3): return .session(tenant: f[1], id: f[2])
        case ("k", 2): return .apiKey(id: f[1])
        case ("c", 3): return .client(tenant: f[1], id: f[2])
        case ("t", 2): return .tenant(f[1])
        case ("u", 4): return .subject(tenant: f[1], client: f[2], subject: f[3])
        case ("e", 4): return .endUser(tenant: f[1], client: f[2], endUser: f[3])
        case ("d", 3): return .dpopNonce(tenant: f[1], client: f[2])
        case ("r", 1): return .resync
        case ("n", 5), ("n", 6):
            return .scheduled(tenant: f[1], id: f[2], client: f[3], at: Double(f[4]).map { Date(timeIntervalSince1970: $0) },
                              version: f.count == 6 ? Int64(f[5]) : nil)
        default: return nil
        }
    }
}
