import BrokerCore
import Foundation
import Testing

/// What the log says of background work that fails pass after pass (a database outage).
@Suite("Failure streaks")
struct FailureStreaksTests {
    let t0 = Date(timeIntervalSince1970: 1_000_000)

    @Test("the first failure is one line; the failures that follow are silent for a minute")
    func firstFailureOnly() {
        var s = FailureStreaks()
        #expect(s.failed("revoker", in: "store", at: t0) == .began(streak: "store", by: "revoker"))
        for i in 1..<100 { #expect(s.failed("revoker", in: "store", at: t0 + Double(i) * 0.5) == nil) }
    }

    @Test("several loops failing for one cause share its streak: one line for all of them")
    func loopsShareAnOutage() {
        var s = FailureStreaks()
        #expect(s.failed("revoker", in: "store", at: t0) != nil)
        #expect(s.failed("webhooks", in: "store", at: t0 + 0.1) == nil)
        #expect(s.failed("signout", in: "store", at: t0 + 0.2) == nil)
    }

    @Test("a streak that goes on is said again at most once a minute, with the failures so far")
    func reminderOnceAMinute() {
        var s = FailureStreaks(reminder: 60)
        _ = s.failed("a", in: "store", at: t0)
        var lines: [FailureStreaks.Line] = []
        for i in 1...240 { if let l = s.failed("a", in: "store", at: t0 + Double(i) * 0.5) { lines.append(l) } }
        #expect(lines == [.continuing(streak: "store", failures: 121, lasting: 60), .continuing(streak: "store", failures: 241, lasting: 120)])
    }

    @Test("the first pass of a loop that failed ends the streak: how long it lasted, how many passes failed")
    func recoveryIsOneLine() {
        var s = FailureStreaks()
        _ = s.failed("revoker", in: "store", at: t0)
        _ = s.failed("webhooks", in: "store", at: t0 + 1)
        _ = s.failed("revoker", in: "store", at: t0 + 2)
        #expect(s.passed("webhooks", at: t0 + 10) == [.ended(streak: "store", failures: 3, lasted: 10)])
        #expect(!s.failing)
        #expect(s.passed("revoker", at: t0 + 10.5) == [])
    }

    @Test("a pass of a loop that never failed ends nothing")
    func unrelatedPassEndsNothing() {
        var s = FailureStreaks()
        _ = s.failed("revoker", in: "store", at: t0)
        #expect(s.passed("pending-answers", at: t0 + 1) == [])
        #expect(s.failing)
    }

    @Test("a loop failing for a cause of its own keeps its own streak, besides an outage")
    func ownCauseOwnStreak() {
        var s = FailureStreaks()
        #expect(s.failed("retention", in: "retention", at: t0) == .began(streak: "retention", by: "retention"))
        #expect(s.failed("revoker", in: "store", at: t0 + 1) == .began(streak: "store", by: "revoker"))
        #expect(s.passed("revoker", at: t0 + 2) == [.ended(streak: "store", failures: 1, lasted: 1)])
        #expect(s.failing)
    }

    @Test("after a recovery, a new failure is a new streak")
    func newStreakAfterRecovery() {
        var s = FailureStreaks()
        _ = s.failed("a", in: "store", at: t0)
        _ = s.passed("a", at: t0 + 1)
        #expect(s.failed("a", in: "store", at: t0 + 2) == .began(streak: "store", by: "a"))
    }
}
