import BrokerCore
import Foundation

/// BlockingExecutor runs blocking work (libpq calls, IdP round trips) on a fixed set of threads,
/// so that HTTP threads never block and a burst never spawns unbounded threads.
///
/// Thread-safety: `submit` may be called from any thread. Work runs in FIFO order across
/// `threads` threads. `shutdown` lets queued work finish, then joins the threads.
public final class BlockingExecutor: Service, @unchecked Sendable {
    public let name: String
    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
    private var stopping = false
    private let finished = DispatchGroup()
    /// Marks the threads of each executor (thread names are not reliable on Linux).
    private static let marker: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0)
        return key
    }()

    public init(threads: Int, name: String) {
        self.name = name
        for i in 0..<max(1, threads) {
            finished.enter()
            let t = Thread { [self] in loop() }
            t.name = "\(name)-\(i)"
            t.stackSize = 1 << 20
            t.start()
        }
    }

    /// Queues `work`, to run with the caller's current trace. After `shutdown`, work is dropped.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        let trace = CurrentTrace.value
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return }
        queue.append(trace == nil ? work : { @Sendable in CurrentTrace.with(trace, work) })
        condition.signal()
    }

    /// Runs `work` now when called on one of this executor's threads (work that is already off
    /// the HTTP threads needs no second hop), else queues it.
    public func run(_ work: @escaping @Sendable () -> Void) {
        if isCurrent { work() } else { submit(work) }
    }

    /// True on one of this executor's threads.
    public var isCurrent: Bool { pthread_getspecific(Self.marker) == Unmanaged.passUnretained(self).toOpaque() }

    /// Queues `work` after `delay` seconds (a timer; no thread waits meanwhile).
    public func after(_ delay: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in submit(work) }
    }

    /// The threads start with the executor; work may be submitted before the group starts.
    public func start() {}

    /// Shuts down: queued work runs first.
    public func stop(deadline: Date) { shutdown() }

    /// Runs what is queued, then stops every thread and waits for them.
    public func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        finished.wait()
    }

    private func loop() {
        pthread_setspecific(Self.marker, Unmanaged.passUnretained(self).toOpaque())
        while true {
            condition.lock()
            while head == queue.count && !stopping { condition.wait() }
            if head == queue.count {
                condition.unlock()
                finished.leave()
                return
            }
            let work = queue[head]
            head += 1
            if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            condition.unlock()
            work()
        }
    }
}
