import BrokerCore
import Foundation
import Testing

@Suite("Client certificate expiry notices (client.certificate_expiring)")
struct CertificateExpiryNoticeTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    func days(_ d: Double) -> Date { now.addingTimeInterval(d * 86_400) }

    @Test("nothing before 30 days; then the nearest threshold crossed, once each: 30, 7, 1")
    func thresholds() {
        #expect(CertificateExpiryNotice.due(notAfter: days(31), told: nil, now: now) == nil)
        #expect(CertificateExpiryNotice.due(notAfter: days(30), told: nil, now: now) == 30)
        #expect(CertificateExpiryNotice.due(notAfter: days(20), told: 30, now: now) == nil)
        #expect(CertificateExpiryNotice.due(notAfter: days(7), told: 30, now: now) == 7)
        #expect(CertificateExpiryNotice.due(notAfter: days(3), told: 7, now: now) == nil)
        #expect(CertificateExpiryNotice.due(notAfter: days(0.5), told: 7, now: now) == 1)
        #expect(CertificateExpiryNotice.due(notAfter: days(0.2), told: 1, now: now) == nil)
    }

    @Test("a certificate first seen close to its end is told its nearest threshold only, and an expired one once")
    func lateStart() {
        #expect(CertificateExpiryNotice.due(notAfter: days(2), told: nil, now: now) == 7)
        #expect(CertificateExpiryNotice.due(notAfter: days(-1), told: nil, now: now) == 1)
        #expect(CertificateExpiryNotice.due(notAfter: days(-1), told: 1, now: now) == nil)
    }
}
