import Foundation

/// FailureStreaks decides what the log says of work that fails over and over, such as the
/// background loops' passes while the database is down: the first failure of a streak is one
/// line; the failures that follow are counted, and said at most once every `reminder`; the
/// first pass that succeeds afterwards ends the streak with one line saying how long it lasted
/// and how many passes failed.
///
/// A streak is named by its cause, so that several workers failing for one cause share it:
/// every loop that finds the database down fails in the streak "store", which the first of
/// them to pass again ends (it proved the database back). A worker failing for a cause of its
/// own fails in a streak of its own name.
///
/// Pure: time is an argument, and the caller logs what it returns.
public struct FailureStreaks: Sendable {
    /// What to log, if anything, of a pass.
    public enum Line: Equatable, Sendable {
        /// The first failure of `streak` (by `by`).
        case began(streak: String, by: String)
        /// Still failing: `failures` passes so far, over `lasting` seconds.
        case continuing(streak: String, failures: Int, lasting: TimeInterval)
        /// Over: `failures` passes failed over `lasted` seconds.
        case ended(streak: String, failures: Int, lasted: TimeInterval)
    }

    private struct Streak: Sendable {
        let since: Date
        var said: Date
        var failures = 1
        var members: Set<String>
    }

    /// The least time between two lines of one streak that goes on.
    public let reminder: TimeInterval
    private var streaks: [String: Streak] = [:]

    public init(reminder: TimeInterval = 60) { self.reminder = reminder }

    /// Whether some streak goes on now.
    public var failing: Bool { !streaks.isEmpty }

    /// A pass of `who` failed, for the cause `streak`.
    public mutating func failed(_ who: String, in streak: String, at now: Date) -> Line? {
        guard var s = streaks[streak] else {
            streaks[streak] = Streak(since: now, said: now, members: [who])
            return .began(streak: streak, by: who)
        }
        s.failures += 1
        s.members.insert(who)
        defer { streaks[streak] = s }
        guard now.timeIntervalSince(s.said) >= reminder else { return nil }
        s.said = now
        return .continuing(streak: streak, failures: s.failures, lasting: now.timeIntervalSince(s.since))
    }

    /// A pass of `who` succeeded: every streak it failed in is over.
    public mutating func passed(_ who: String, at now: Date) -> [Line] {
        guard !streaks.isEmpty else { return [] }
        let over = streaks.filter { $0.value.members.contains(who) }.sorted { $0.key < $1.key }
        for (name, _) in over { streaks[name] = nil }
        return over.map { .ended(streak: $0.key, failures: $0.value.failures, lasted: now.timeIntervalSince($0.value.since)) }
    }
}
