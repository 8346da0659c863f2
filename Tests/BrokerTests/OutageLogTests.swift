@testable import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// The background loops' failures as the log shows them, driven by a manual clock.
@Suite("Outage log")
struct OutageLogTests {
    struct Down: Error {}
    struct Bug: Error {}

    final class Lines: Sendable {
        let all = Mutex<[(RefreshEvent, [(String, String)])]>([])
        var codes: [String] { all.withLock { $0.map(\.0.code) } }
    }

    @Test("every loop failing pass after pass while the database is down: one WARN line, then one INFO line with the count and the time")
    func oneOutageOneLine() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000))
        let lines = Lines()
        let log = OutageLog(clock: clock, isOutage: { $0 is Down }) { e, f in lines.all.withLock { $0.append((e, f)) } }
        for _ in 0..<20 {
            for loop in ["revoker", "webhooks", "signout"] { log.failed(loop, doing: "\(loop) failed", Down()) }
            clock.advance(by: 0.5)
        }
        #expect(lines.codes == ["store_unavailable"])
        log.passed("webhooks")
        #expect(lines.codes == ["store_unavailable", "store_available"])
        let (end, fields) = try #require(lines.all.withLock { $0.last })
        #expect(end.level == .info)
        #expect(fields.contains { $0 == ("failures", "60") } && fields.contains { $0 == ("seconds", "10.0") })
    }

    @Test("a loop's own fault is its own streak, said as loop_failing and loop_recovered")
    func ownFault() {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000))
        let lines = Lines()
        let log = OutageLog(clock: clock, isOutage: { $0 is Down }) { e, f in lines.all.withLock { $0.append((e, f)) } }
        log.failed("retention", doing: "retention pass failed", Bug())
        log.failed("retention", doing: "retention pass failed", Bug())
        log.passed("revoker")
        log.passed("retention")
        #expect(lines.codes == ["loop_failing", "loop_recovered"])
    }
}
