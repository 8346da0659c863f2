import BrokerCore
import Foundation
import Synchronization

/// RefreshEngine refreshes sessions before their access tokens expire (spec §5). Every replica
/// runs one: it loads the sessions due within `horizon` from the database (at start and every
/// `loadInterval`), follows schedule changes published by any replica, keeps them in a timer
/// wheel, and hands each due session to the refresh pool, which runs it through the same
/// single-flight path as on-demand requests with only a try of the session's lock: when
/// another replica holds it, this one checks back after `busyRetry`.
///
/// Threading contract: the wheel and the handle table belong to `queue`; every method hops onto
/// it, except the in-flight table, which sits behind its own mutex. The DispatchSourceTimer ticks on `queue`. Loads query the database off the queue.
public final class RefreshEngine: @unchecked Sendable {
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

    private struct Item {
        let key: SessionKey
        let client: String
    }

    let config: Config
    let tokens: TokenService
    let store: any SessionStore
    let registry: RegistryCache
    let clock: any Clock
    public let pool: RefreshPool
    private let queue = DispatchQueue(label: "tokenbroker.refresh-engine")
    private var wheel: TimerWheel<Item>
    private var handles: [SessionKey: TimerWheel<Item>.Handle] = [:]
    /// Sessions handed to the pool and not finished, with any schedule announced for them
    /// meanwhile (it wins over a busy retry, and spares a job that waited its lock attempt).
    /// Behind a mutex, not the queue, so that a pool thread starting a job never waits for the
    /// engine's queue to drain.
    private struct InFlight {
        var running: Set<SessionKey> = []
        var announced: [SessionKey: Date?] = [:]
    }
    private let inFlight = Mutex(InFlight())
    private var timers: [any DispatchSourceTimer] = []
    private var stopped = false
    /// Timers pending, mirrored for metrics.
    public let scheduled = Atomic<Int>(0)
    /// Active sessions whose grant nears the IdP's absolute lifetime (last load).
    public let nearGrantExpiry = Atomic<Int>(0)
    /// Whether the first load has been scheduled (readiness waits for it).
    public let loaded = Atomic<Bool>(false)

    public init(config: Config, tokens: TokenService, store: any SessionStore, registry: RegistryCache, clock: any Clock, pool: RefreshPool) {
        self.config = config
        self.tokens = tokens
        self.store = store
        self.registry = registry
        self.clock = clock
        self.pool = pool
        wheel = TimerWheel(origin: clock.now(), tickSeconds: config.tick)
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
            stopped = true
            for t in timers { t.cancel() }
            timers = []
        }
        pool.shutdown()
    }

    /// Follows a change published by any replica.
    public func apply(_ change: Change) {
        switch change {
        case .scheduled(let tenant, let id, let client, let at, _):
            let key = SessionKey(tenant: tenant, id: id)
            let noted = inFlight.withLock { f -> Bool in
                guard f.running.contains(key) else { return false }
                f.announced[key] = .some(at)
                return true
            }
            if !noted { queue.async { self.schedule(Item(key: key, client: client), at: at) } }
        case .resync:
            queue.async { self.load() }
        default:
            break
        }
    }

    /// Schedules a session at `at`, replacing its timer; nil or past the horizon cancels it
    /// (the periodic load brings it back when it comes within the horizon).
    private func schedule(_ item: Item, at: Date?) {
        if let h = handles.removeValue(forKey: item.key) { wheel.cancel(h) }
        if let at, at < clock.now().addingTimeInterval(config.horizon), !stopped {
            handles[item.key] = wheel.schedule(item, at: at.addingTimeInterval(Double.random(in: 0...config.spread)))
        }
        scheduled.store(wheel.count, ordering: .relaxed)
    }

    private func advance() {
        guard !stopped else { return }
        for item in wheel.advance(to: clock.now()) {
            handles[item.key] = nil
            guard inFlight.withLock({ $0.running.insert(item.key).inserted }) else { continue }
            dispatch(item)
        }
        scheduled.store(wheel.count, ordering: .relaxed)
    }

    private func dispatch(_ item: Item) {
        let cap = registry.peekClient(tenant: item.key.tenant, id: item.client, now: clock.now())??.maxConcurrentRefreshes ?? 8
        pool.submit(RefreshPool.Job(client: item.key.tenant + "/" + item.client, cap: cap) { [self] in
            // While the job waited for a slot, another replica may have refreshed the session and
            // announced its new schedule: then there is nothing to try.
            let waited: Date?? = inFlight.withLock { $0.announced[item.key] }
            let outcome = waited.map { DueOutcome.next($0) } ?? tokens.refreshDue(item.key, client: item.client)
            let notice = inFlight.withLock { f -> Date?? in
                f.running.remove(item.key)
                return f.announced.removeValue(forKey: item.key)
            }
            queue.async { [self] in
                switch (outcome, notice) {
                case (.next(let at), _): schedule(item, at: at)
                case (.busy, .some(let at)): schedule(item, at: at)        // the holder already said what it did
                case (.busy, nil): schedule(item, at: clock.now().addingTimeInterval(config.busyRetry))
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
                tokens.events(LogLine(tenant: "", client: "", session: nil, event: RefreshEvent(
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
            queue.async { [self] in
                // The database is the truth: re-arm every due session (a lost notice is mended here).
                let running = inFlight.withLock { $0.running }
                for d in due {
                    let key = SessionKey(tenant: d.tenant, id: d.id)
                    if !running.contains(key) { schedule(Item(key: key, client: d.client), at: d.at) }
                }
                loaded.store(true, ordering: .releasing)
            }
        }
    }
}
