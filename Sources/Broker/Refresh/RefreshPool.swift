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

    /// A FIFO whose pops are O(1): a head index into the array, compacted now and then.
    struct FIFO<Element> {
        private var items: [Element] = []
        private var head = 0
        var isEmpty: Bool { head == items.count }
        var count: Int { items.count - head }
        var first: Element? { isEmpty ? nil : items[head] }
        mutating func append(_ e: Element) { items.append(e) }
        mutating func popFirst() -> Element? {
            guard !isEmpty else { return nil }
            defer {
                head += 1
                if head > 64 && head * 2 > items.count {
                    items.removeFirst(head)
                    head = 0
                }
            }
            return items[head]
        }
    }

    private struct State {
        var running = 0
        var perClient: [String: Int] = [:]
        var waiting: [String: FIFO<Job>] = [:]
        var order = FIFO<String>()          // clients with waiting jobs, round-robin
        var waitingCount = 0
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
            s.waiting[job.client, default: FIFO()].append(job)
            s.waitingCount += 1
            return false
        }
        if start { launch(job) }
    }

    /// Refreshes running now, and waiting for a cap.
    public var load: (running: Int, waiting: Int) {
        state.withLock { s in (s.running, s.waitingCount) }
    }

    /// Lets running work finish; waiting work is dropped (its sessions stay due in the database).
    public func shutdown() { executor.shutdown() }

    private func launch(_ job: Job) {
        executor.submit { [self] in
            job.run()
            for next in finished(job.client) { launch(next) }
        }
    }

    /// Frees the finished job's slots and takes what may start now: clients in round-robin
    /// order, each queue mutated in place (no copies), so a finish costs O(clients visited).
    private func finished(_ client: String) -> [Job] {
        state.withLock { s in
            s.running -= 1
            s.perClient[client, default: 1] -= 1
            var started: [Job] = []
            var skipped = 0
            while s.running < globalCap, skipped < s.order.count, let c = s.order.popFirst() {
                guard let cap = s.waiting[c]?.first?.cap else { continue }
                if s.perClient[c, default: 0] < cap, let job = s.waiting[c]!.popFirst() {
                    s.waitingCount -= 1
                    s.running += 1
                    s.perClient[c, default: 0] += 1
                    started.append(job)
                    skipped = 0
                } else {
                    skipped += 1
                }
                if s.waiting[c]!.isEmpty { s.waiting[c] = nil } else { s.order.append(c) }
            }
            return started
        }
    }
}
