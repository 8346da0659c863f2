import Foundation

/// Service is a part of the broker that works in the background between `start` and `stop`: a
/// listener, the refresh engine, a background loop, an executor, the change feed. A
/// ServiceGroup starts services in the order they depend on one another and stops them in
/// reverse, under one deadline for the whole shutdown.
///
/// Thread-safety: `start` and `stop` are called once each, from one thread at a time; `stop`
/// may be called on a service never started, and then returns at once.
public protocol Service: AnyObject, Sendable {
    /// The service's name in the start and stop log lines.
    var name: String { get }
    /// Starts the service's work; throws when it cannot (an address in use, say).
    func start() throws
    /// Stops the service, letting work in flight finish, and returns once it has stopped.
    /// `deadline` is when the whole shutdown should be over: a service that can cut its wait
    /// short does so by then; one that cannot is abandoned at the deadline by its group.
    func stop(deadline: Date)
}
