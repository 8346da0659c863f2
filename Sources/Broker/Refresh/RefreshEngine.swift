import BrokerCore
import Foundation
import Synchronization

/// RefreshEngine refreshes sessions before their access tokens expire. Every replica
/// runs one: it loads the sessions due within `horizon` from the database (at start and every
/// `loadInterval`), follows schedule changes published by any replica, keeps them in a timer
/// wheel, reads the rows of the sessions each tick fires in one query per tenant, and hands
/// each to the refresh pool, which runs it through the same single-flight path as on-demand
/// requests, deciding on that row and writing its attempt only if the row is unchanged: when
/// another replica acted on it meanwhile, this one follows its announcement, or checks back
/// after `busyRetry`.
///
/// Threading contract: the wheel, its handles and the in-flight table sit behind one mutex, so
/// that a finished job or a notice schedules on its own thread: a hop onto a queue woke a
/// Dispatch worker each time (two context switches a refresh, of nine, in a storm). The
/// DispatchSourceTimers tick on `queue`; loads query the database off it.
public final class RefreshEngine: Service, @unchecked Sendable {
    public var name: String { "refresh-engine" }

    public struct Config: Sendable {
        public var tick: TimeInterval = 0.1
        public var horizon: TimeInterval = 120
        public var loadInterval: TimeInterval = 30
        public var loadLimit = 200_000
        public var busyRetry: TimeInterval = 1
        /// Each replica fires a due session after a random delay in 0...spread, so that usually
        /// one replica refreshes and the others hear of it before they try.
        public var spread: TimeInterval = 0.5
        /// The IdP's absolute refresh-token lifetime (XID: 7 days), and how early to report it.
        /// Grants ending within this are counted as near their end (a gauge).
        public var grantWarning: TimeInterval = 86_400
        public init() {}
    }

    private struct Item: Sendable {
        let key: SessionKey
        let client: String
    }

    /// Timers, and the sessions handed to the pool and not finished with any schedule
    /// announced for them meanwhile (it wins over a busy retry, and spares a job that waited
    /// its lock attempt).
    private struct State: ~Copyable {
        var wheel: TimerWheel<Item>
        var handles: [SessionKey: TimerWheel<Item>.Handle] = [:]
        var running: Set<SessionKey> = []
        var announced: [SessionKey: Date?] = [:]
        var stopped = false

        /// Schedules a session at `at` (after a random delay within `spread`), replacing its
        /// timer; nil or past the horizon cancels it (the periodic load brings it back when it
        /// comes within the horizon).
        mutating func schedule(_ item: Item, at: Date?, now: Date, _ config: Config) {
            if let h = handles.removeValue(forKey: item.key) { wheel.cancel(h) }
            if let at, at < now.addingTimeInterval(config.horizon), !stopped {
                handles[item.key] = wheel.schedule(item, at: at.addingTimeInterval(Double.random(in: 0...config.spread)))
            }
        }
    }

    let config: Config
    let refresher: RefreshDriver
    let store: any SessionStore
    let registry: RegistryCache
    let clock: any Clock
    public let pool: RefreshPool
    private let queue = DispatchQueue(label: "tokenbroker.refresh-engine")
    private let state: Mutex<State>
    private var timers: [any DispatchSourceTimer] = []
    /// Timers pending, mirrored for metrics.
    public let scheduled = Atomic<Int>(0)
    /// Active sessions whose grant nears the IdP's absolute lifetime (last load).
    public let nearGrantExpiry = Atomic<Int>(0)
    /// Whether the first load has been scheduled (readiness waits for it).
    public let loaded = Atomic<Bool>(false)

    /// Where a failed load is reported (a database outage is one line for the whole replica);
    /// without one, each failed load is a line of its own.
    let outages: OutageLog?

    public init(config: Config, refresher: RefreshDriver, store: any SessionStore, registry: RegistryCache, clock: any Clock, pool: RefreshPool,
                outages: OutageLog? = nil) {
        self.config = config
        self.outages = outages
        self.refresher = refresher
        self.store = store
        self.registry = registry
        self.clock = clock
        self.pool = pool
        state = Mutex(State(wheel: TimerWheel(origin: clock.now(), tickSeconds: config.tick)))
    }

    /// Loads what is due and starts ticking.
    public func start() {
        queue.async { [self] in
            let tick = DispatchSource.makeTimerSource(queue: queue)
            tick.schedule(deadline: .now() + config.tick, repeating: config.tick, leeway: .milliseconds(5))
            tick.setEventHandler { [weak self] in self?.advance() }
            let load = DispatchSource.makeTimerSource(queue: queue)
            load.schedule(deadline: .now(), repeating: config.loadInterval, leeway: .milliseconds(100))
            load.setEventHandler { [weak self] in self?.load() }
            timers = [tick, load]
            tick.resume()
            load.resume()
        }
    }

    /// Stops scheduling, then lets refreshes already running finish (their transactions commit
    /// or roll back, releasing their locks). Sessions not refreshed stay due in the database.
    public func stop() {
        queue.sync {
            for t in timers { t.cancel() }
            timers = []
        }
        state.withLock { $0.stopped = true }
        pool.shutdown()
    }

    /// Stops as `stop()`; refreshes still running at `deadline` are left to the group (their
    /// sessions stay due, and another replica resolves what was in flight).
    public func stop(deadline: Date) { stop() }

    /// Follows a change published by any replica.
    public func apply(_ change: Change) {
        switch change {
        case .scheduled(let tenant, let id, let client, let at, _):
            let key = SessionKey(tenant: tenant, id: id), now = clock.now()
            update { s in
                if s.running.contains(key) { s.announced[key] = .some(at) } else { s.schedule(Item(key: key, client: client), at: at, now: now, config) }
            }
        case .resync:
            queue.async { self.load() }
        default:
            break
        }
    }

    /// Runs `body` on the state under its mutex, then mirrors the timers pending for metrics.
    @discardableResult
    private func update<T: Sendable>(_ body: (inout State) -> T) -> T {
        let (result, count) = state.withLock { s in (body(&s), s.wheel.count) }
        scheduled.store(count, ordering: .relaxed)
        return result
    }

    private func advance() {
        let now = clock.now()
        let fired = update { s -> [Item] in
            guard !s.stopped else { return [] }
            var fired: [Item] = []
            for item in s.wheel.advance(to: now) {
                s.handles[item.key] = nil
                if s.running.insert(item.key).inserted { fired.append(item) }
            }
            return fired
        }
        guard !fired.isEmpty else { return }
        // The tick's rows are read together, off the queue (one round trip per tenant instead
        // of one per session); each job then decides on its row and writes over it only if it
        // is unchanged (DueRow). Unreadable now: each job reads its own.
        DispatchQueue.global().async { [self] in
            let rows = read(fired)
            guard !state.withLock({ $0.stopped }) else { return }   // stop() came meanwhile: nothing new starts
            for item in fired { dispatch(item, read: rows[item.key]) }
        }
    }

    /// The rows of `items`, one query per tenant, a thousand at most each.
    private func read(_ items: [Item]) -> [SessionKey: DueRow] {
        var rows: [SessionKey: DueRow] = [:]
        for (tenant, keys) in Dictionary(grouping: items.map(\.key), by: \.tenant) {
            var rest = keys[...]
            while !rest.isEmpty {
                let chunk = rest.prefix(1_000)
                rest = rest.dropFirst(chunk.count)
                let at = clock.now()   // the rows are at least this fresh
                // Unreadable now: those jobs read their own rows (and meet the error there, logged).
                guard let found = try? store.sessions(tenant: tenant, ids: chunk.map(\.id)) else { continue }
                for s in found { rows[SessionKey(tenant: tenant, id: s.id)] = DueRow(s, readAt: at) }
            }
        }
        return rows
    }

    private func dispatch(_ item: Item, read: DueRow?) {
        let cap = registry.peekClient(tenant: item.key.tenant, id: item.client, now: clock.now())??.maxConcurrentRefreshes ?? 8
        pool.submit(RefreshPool.Job(client: item.key.tenant + "/" + item.client, cap: cap) { [self] in
            // While the job waited for a slot, another replica may have refreshed the session and
            // announced its new schedule: then there is nothing to try.
            let waited: Date?? = state.withLock { $0.announced[item.key] }
            let outcome = waited.map { DueOutcome.next($0) } ?? refresher.refreshDue(item.key, client: item.client, read: read)
            let now = clock.now()
            update { s in
                s.running.remove(item.key)
                switch (outcome, s.announced.removeValue(forKey: item.key)) {
                case (.next(let at), _): s.schedule(item, at: at, now: now, config)
                case (.busy, .some(let at)): s.schedule(item, at: at, now: now, config)      // the holder already said what it did
                case (.busy, nil): s.schedule(item, at: now.addingTimeInterval(config.busyRetry), now: now, config)
                }
            }
        })
    }

    /// Pulls the sessions due within the horizon, off the queue, then schedules them on it.
    private func load() {
        let now = clock.now()
        DispatchQueue.global().async { [self] in
            let due: [DueSession]
            do { due = try store.dueSessions(before: now.addingTimeInterval(config.horizon), limit: config.loadLimit) } catch {
                if let outages {
                    outages.failed(name, doing: "loading due sessions failed; the timers already armed run, the next load retries", error)
                    return
                }
                refresher.events(LogLine(tenant: "", client: "", session: nil, event: RefreshEvent(
                    .warn, "engine_load_failed", "loading due sessions failed (\(error)); the timers already armed run, the next load retries")))
                return
            }
            defer {
                // Reported, not needed to schedule: counted after the due sessions are armed. A
                // failed count leaves the last one (a gauge; the next load counts again).
                if let near = try? store.countGrantsExpiring(before: now.addingTimeInterval(config.grantWarning)) {
                    nearGrantExpiry.store(near, ordering: .relaxed)
                }
            }
            // The database is the truth: re-arm every due session (a lost notice is mended here),
            // a slice at a time so that a job finishing meanwhile waits for one slice at most.
            var rest = due[...]
            while !rest.isEmpty {
                let slice = rest.prefix(4_096)
                rest = rest.dropFirst(slice.count)
                let now = clock.now()
                update { s in
                    for d in slice {
                        let key = SessionKey(tenant: d.tenant, id: d.id)
                        if !s.running.contains(key) { s.schedule(Item(key: key, client: d.client), at: d.at, now: now, config) }
                    }
                }
            }
            loaded.store(true, ordering: .releasing)
            outages?.passed(name)
        }
    }
}
