import Foundation

/// Clock is the seam through which every decision reads the time, so that tests never sleep.
public protocol Clock: Sendable {
    /// The current instant.
    func now() -> Date
}

/// SystemClock reads the wall clock.
public struct SystemClock: Clock {
    public init() {}
    public func now() -> Date { Date() }
}
