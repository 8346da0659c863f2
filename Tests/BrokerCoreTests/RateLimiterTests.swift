import BrokerCore
import Foundation
import Testing

@Suite("Rate limiter (token bucket, time as an argument)")
struct RateLimiterTests {
    @Test("a burst goes at once, then calls are spaced at the rate")
    func spacing() {
        var l = RateLimiter(rate: 10, burst: 2)
        let t0 = Date(timeIntervalSince1970: 1000)
        #expect(l.delay(now: t0) == 0)
        #expect(l.delay(now: t0) == 0)
        #expect(abs(l.delay(now: t0) - 0.1) < 1e-9)
        #expect(abs(l.delay(now: t0) - 0.2) < 1e-9)
        #expect(l.delay(now: t0.addingTimeInterval(10)) == 0)   // refilled, capped at the burst
    }

    @Test("a rate of 0 is unlimited")
    func unlimited() {
        var l = RateLimiter(rate: 0)
        #expect((0..<1000).allSatisfy { _ in l.delay(now: Date(timeIntervalSince1970: 0)) == 0 })
    }
}
