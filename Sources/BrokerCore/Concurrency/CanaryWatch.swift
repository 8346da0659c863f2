import Foundation

/// CanaryWatch decides whether a change feed delivers, from canaries: notices a replica sends
/// itself through the feed every few seconds. The feed is dead once a canary sent more than
/// `bound` ago has not come back, and alive again when one comes back. A canary that could not
/// be sent (the database unreachable) proves nothing either way and is forgotten. The feed
/// delivers in order, so a canary back means every earlier one is back or lost for good.
/// A listening connection opened again (after an outage, or on the standby a failover
/// promoted) is unproven until a canary sent through it comes back: only that shows that the
/// notices the fleet sends reach it.
///
/// Pure: time is an argument; the feed's driver sends, receives and acts on what it returns.
public struct CanaryWatch: Sendable {
    /// A change of the feed's state.
    public enum Verdict: Equatable, Sendable {
        /// The canary sent `waited` seconds ago has not come back.
        case died(waited: TimeInterval)
        /// A canary came back after the feed was found dead, or after it was opened again.
        case recovered
        /// The listening connection was opened again after it broke: not trusted until a
        /// canary comes back through it.
        case unproven
    }

    private enum State { case alive, unproven, dead }

    public let bound: TimeInterval
    /// Canaries sent and not back yet, oldest first.
    private var out: [(number: Int, at: Date)] = []
    private var next = 1
    private var state = State.alive
    /// Whether the feed is known to deliver: not found dead, and proven since it was last opened.
    public var alive: Bool { state == .alive }

    public init(bound: TimeInterval) { self.bound = bound }

    /// A canary is sent at `now`: the number it carries.
    public mutating func send(at now: Date) -> Int {
        defer { next += 1 }
        // A dead feed's canaries pile up: the oldest few are enough to judge by.
        if out.count >= 64 { out.removeFirst() }
        out.append((next, now))
        return next
    }

    /// The listening connection was opened (`again`: after it broke). Canaries sent before are
    /// lost with the old one (say, all of those of a database outage) and prove nothing of the
    /// new one, which is unproven until one of its own comes back.
    public mutating func listening(again: Bool = false) -> Verdict? {
        out.removeAll()
        guard again, state == .alive else { return nil }
        state = .unproven
        return .unproven
    }

    /// Canary `number` could not be sent.
    public mutating func unsent(_ number: Int) { out.removeAll { $0.number == number } }

    /// Canary `number` came back: it and every earlier one are settled.
    public mutating func delivered(_ number: Int) -> Verdict? {
        out.removeAll { $0.number <= number }
        guard state != .alive else { return nil }
        state = .alive
        return .recovered
    }

    /// The feed's state at `now`, when it changed.
    public mutating func check(at now: Date) -> Verdict? {
        guard state != .dead, let oldest = out.first, now.timeIntervalSince(oldest.at) > bound else { return nil }
        state = .dead
        return .died(waited: now.timeIntervalSince(oldest.at))
    }
}
