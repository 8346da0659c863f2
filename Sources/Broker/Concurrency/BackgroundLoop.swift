import BrokerCore
import Foundation
import Synchronization

/// BackgroundLoop runs one kind of background work on a thread of its own: a pass every
/// `interval` (the first after `first`), again at once while a pass says there is more, until
/// `stop()`. A pass that throws is handed to `failed` (the runtime's OutageLog), one that
/// returns to `passed`, and a failed one is tried again at the next interval; the loop never
/// dies of it.
public final class BackgroundLoop: Service {
    public let name: String
    private let interval: TimeInterval
    private let first: TimeInterval
    private let work: @Sendable () throws -> Bool
    private let failed: @Sendable (any Error) -> Void
    private let passed: @Sendable () -> Void
    private let state = Mutex<(started: Bool, stopping: Bool, stopped: Bool)>((false, false, false))
    /// Wakes a sleeping loop at stop; `finished` is signalled when the thread ends.
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `work` answers true when there is more to do now (run again without waiting).
    public init(_ name: String, every interval: TimeInterval, first: TimeInterval? = nil,
                failed: @escaping @Sendable (any Error) -> Void, passed: @escaping @Sendable () -> Void = {},
                work: @escaping @Sendable () throws -> Bool) {
        (self.name, self.interval, self.first, self.failed, self.passed, self.work) = (name, interval, first ?? interval, failed, passed, work)
    }

    public func start() {
        guard state.withLock({ s in defer { s.started = true }; return !s.started }) else { return }
        let t = Thread { [self] in
            defer { finished.signal() }
            guard sleep(first) else { return }
            while true {
                var more = false
                do {
                    more = try work()
                    passed()
                } catch { failed(error) }
                if stopping { return }
                if !more, !sleep(interval) { return }
            }
        }
        t.name = name
        t.start()
    }

    /// Ends the loop: a sleeping loop wakes and ends, a running pass finishes first. Returns
    /// when the thread has ended (at once if it never started).
    public func stop() {
        let wait = state.withLock { s in
            s.stopping = true
            defer { s.stopped = true }
            return s.started && !s.stopped
        }
        guard wait else { return }   // never started, or already stopped (a second stop returns at once)
        wake.signal()
        finished.wait()
    }

    /// Stops as `stop()`: a pass cannot be cut short, so one overrunning `deadline` is left to
    /// its group.
    public func stop(deadline: Date) { stop() }

    private var stopping: Bool { state.withLock { $0.stopping } }

    /// Sleeps `seconds` unless stopped meanwhile; false when stopped.
    private func sleep(_ seconds: TimeInterval) -> Bool {
        if stopping { return false }
        _ = wake.wait(timeout: .now() + seconds)
        return !stopping
    }
}
