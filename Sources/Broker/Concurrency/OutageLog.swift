import BrokerCore
import Foundation
import Synchronization

/// OutageLog is the log of a replica's background work failing over and over (FailureStreaks
/// driven by the clock): a database outage is one WARN line when the first loop finds it, at
/// most one a minute while it lasts, and one INFO line when a loop finds the database back —
/// however many loops fail meanwhile, and however often.
///
/// Thread-safety: every method may be called from any thread.
public final class OutageLog: Sendable {
    /// The streak of every failure that `cause` calls a database outage.
    public static let store = "store"

    private let streaks: Mutex<FailureStreaks>
    private let clock: any Clock
    private let isOutage: @Sendable (any Error) -> Bool
    private let write: @Sendable (RefreshEvent, [(String, String)]) -> Void

    /// `isOutage`: whether an error means the database is unavailable (one streak for every
    /// loop); `write`: where the lines go, with their fields (`loop`, `failures`, `seconds`).
    public init(clock: any Clock, reminder: TimeInterval = 60, isOutage: @escaping @Sendable (any Error) -> Bool,
                write: @escaping @Sendable (RefreshEvent, [(String, String)]) -> Void) {
        streaks = Mutex(FailureStreaks(reminder: reminder))
        (self.clock, self.isOutage, self.write) = (clock, isOutage, write)
    }

    /// A pass of the loop `who` failed while `doing` something (said on the first line only).
    public func failed(_ who: String, doing what: String, _ error: any Error) {
        let outage = isOutage(error)
        let now = clock.now()
        let error = (error as? BrokerError)?.code ?? String(describing: error)
        guard let line = streaks.withLock({ $0.failed(who, in: outage ? Self.store : who, at: now) }) else { return }
        switch line {
        case .began:
            write(RefreshEvent(.warn, outage ? "store_unavailable" : "loop_failing",
                               outage ? "the database is unavailable; background work is tried again at each loop's interval and logged once a minute until it is back (\(what): \(error))"
                                      : "\(what) (\(error)); tried again at the loop's interval, logged once a minute until it passes"),
                  [("loop", who)])
        case .continuing(_, let failures, let lasting):
            write(RefreshEvent(.warn, outage ? "store_unavailable" : "loop_failing",
                               outage ? "the database is still unavailable" : "\(what) still fails (\(error))"),
                  [("loop", who), ("failures", String(failures)), ("seconds", String(Int(lasting)))])
        case .ended: break
        }
    }

    /// A pass of the loop `who` reached the database and succeeded.
    public func passed(_ who: String) {
        let now = clock.now()
        let lines = streaks.withLock { s in s.failing ? s.passed(who, at: now) : [] }
        for case .ended(let streak, let failures, let lasted) in lines {
            let seconds = String(format: "%.1f", lasted)
            write(RefreshEvent(.info, streak == Self.store ? "store_available" : "loop_recovered",
                               streak == Self.store ? "the database is available again" : "the loop passes again"),
                  [("loop", who), ("failures", String(failures)), ("seconds", seconds)])
        }
    }
}
