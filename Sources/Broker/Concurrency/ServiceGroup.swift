import BrokerCore
import Foundation
import Synchronization

/// ServiceGroup runs the broker's services as one: it starts them stage by stage, in the order
/// given (a service's dependencies come before it), and stops them in reverse under one
/// deadline. The services of one stage start in order and stop together, each on a thread of
/// its own (the listeners: a shutdown lasts as long as the slowest one's drain, not their sum).
///
/// Guarantees: `stop(deadline:)` returns by the deadline (give or take a thread's start). A
/// service still stopping then is reported as `overran` and left to finish on its own thread;
/// the services after it are still asked to stop, but no longer waited for. Every start and stop
/// is reported to `events` by the service's name.
public final class ServiceGroup: Sendable {
    /// What the group reports, for the logs.
    public enum Event: Sendable, Equatable {
        case started(String)
        /// Stopped after `seconds`.
        case stopped(String, seconds: Double)
        /// Still stopping at the deadline, `seconds` after it was asked to.
        case overran(String, seconds: Double)
    }

    private let stages: [[any Service]]
    private let events: @Sendable (Event) -> Void
    /// The stages started so far (only those are stopped).
    private let started = Mutex<Int>(0)

    public init(stages: [[any Service]], events: @escaping @Sendable (Event) -> Void) {
        (self.stages, self.events) = (stages.filter { !$0.isEmpty }, events)
    }

    /// One service a stage.
    public convenience init(_ services: [any Service], events: @escaping @Sendable (Event) -> Void) {
        self.init(stages: services.map { [$0] }, events: events)
    }

    /// The services' names, in the order they start.
    public var names: [String] { stages.flatMap { $0.map(\.name) } }

    /// Starts every stage in order. A service that fails to start is thrown; the stages started
    /// before it stay started (the caller stops the group, or exits).
    public func start() throws {
        for stage in stages {
            started.withLock { $0 += 1 }
            for s in stage {
                try s.start()
                events(.started(s.name))
            }
        }
    }

    /// Stops the started stages in reverse order, the services of a stage together; returns by
    /// `deadline`.
    public func stop(deadline: Date) {
        let count = started.withLock { n in defer { n = 0 }; return n }
        for stage in stages.prefix(count).reversed() {
            let waits = stage.map { s in
                let done = DispatchSemaphore(value: 0), began = Date()
                Thread.detachNewThread {
                    s.stop(deadline: deadline)
                    done.signal()
                }
                return (s, done, began)
            }
            for (s, done, began) in waits {
                if done.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow)) == .timedOut {
                    events(.overran(s.name, seconds: Date().timeIntervalSince(began)))
                } else {
                    events(.stopped(s.name, seconds: Date().timeIntervalSince(began)))
                }
            }
        }
    }
}
