import Broker
import BrokerCore
import Foundation
import Testing

@Suite("Usage marks")
struct UsageRecorderTests {
    @Test("marks recorded on many threads drain once, the latest per session")
    func latestPerSession() {
        let usage = UsageRecorder<SessionKey>()
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let done = DispatchGroup()
        for i in 0..<8 {
            done.enter()
            Thread {
                usage.record(SessionKey(tenant: "t", id: "shared"), at: t0.addingTimeInterval(Double(i)))
                usage.record(SessionKey(tenant: "t", id: "own-\(i)"), at: t0)
                usage.record(SessionKey(tenant: "t", id: "shared"), at: t0)   // older: does not win
                done.leave()
            }.start()
        }
        done.wait()
        let marks = usage.drain()
        #expect(marks.count == 9)
        #expect(marks.first { $0.id == "shared" }?.at == t0.addingTimeInterval(7))
        #expect(usage.drain().isEmpty)
    }
}
