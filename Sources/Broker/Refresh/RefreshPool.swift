import Foundation
import Synchronization

/// RefreshPool runs due refreshes with a global cap and a cap per client registration, so that
/// a burst of expiries never floods one IdP. Work waiting for its client's cap queues in FIFO
/// order per client; clients are served round-robin as capacity frees up.
///
/// Thread-safety: `submit` may be called from any thread; work runs on the pool's own threads.
public final class RefreshPool: Sendable {
    public struct Job: Sendable {
        public let client: String          // "tenant/client": the cap's key
        public let cap: Int
        public let run: @Sendable () -> Void
        public init(client: String, cap: Int, run: @escaping @Sendable () -> Void) {
            self.client = client
            self.cap = cap
            self.run = run
        }
    }

    private struct State {
        var running = 0
        var perClient: [String: Int] = [:]
        var waiting: [String: [Job]] = [:]
        var order: [String] = []          // clients with waiting jobs, round-robin
    }

    private let state = Mutex(State())
    private let executor: BlockingExecutor
    public let globalCap: Int

    public init(globalCap: Int) {
        self.globalCap = max(1, globalCap)
        executor = BlockingExecutor(threads: self.globalCap, name: "refresh")
    }

    public func submit(_ job: Job) {
        let start = state.withLock { s -> Bool in
            if s.running < globalCap && s.perClient[job.client, default: 0] < job.cap {
                s.running += 1
                s.perClient[job.client, default: 0] += 1
                return true
            }
            if s.waiting[job.client] == nil { s.order.append(job.client) }
            s.waiting[job.client, default: []].append(job)
            return false
        }
        if start { launch(job) }
    }

    /// Refreshes running now, and waiting for a cap.
    public var load: (running: Int, waiting: Int) {
        state.withLock { s in (s.running, s.waiting.values.reduce(0) { $0 + $1.count }) }
    }

    /// Lets running work finish; waiting work is dropped (its sessions stay due in the database).
    public func shutdown() { executor.shutdown() }

    private func launch(_ job: Job) {
        executor.submit { [self] in
            job.run()
            for next in finished(job.client) { launch(next) }
        }
    }

    /// Frees the finished job's slots and takes what may start now.
    private func finished(_ client: String) -> [Job] {
        state.withLock { s in
            s.running -= 1
            s.perClient[client, default: 1] -= 1
            var started: [Job] = []
            var skipped = 0
            while s.running < globalCap, !s.order.isEmpty, skipped < s.order.count {
                let c = s.order.removeFirst()
                guard var queue = s.waiting[c], let job = queue.first else { continue }
                if s.perClient[c, default: 0] < job.cap {
                    queue.removeFirst()
                    s.running += 1
                    s.perClient[c, default: 0] += 1
                    started.append(job)
                    skipped = 0
                } else {
                    skipped += 1
                }
                if queue.isEmpty { s.waiting[c] = nil } else {
                    s.waiting[c] = queue
                    s.order.append(c)
                }
            }
            return started
        }
    }
}
