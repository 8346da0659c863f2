import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

/// What the webhook outbox does when its own bookkeeping fails.
@Suite("Webhook outbox")
struct WebhookOutboxTests {
    /// One delivery due; recording an attempt's outcome fails.
    final class RecordsNothing: WebhookStore {
        let due: WebhookDelivery
        init(_ due: WebhookDelivery) { self.due = due }
        func createEndpoint(_ e: WebhookEndpoint, secret: String) throws {}
        func endpoints(tenant: String) throws -> [WebhookEndpoint] { [] }
        func deleteEndpoint(tenant: String, id: String, now: Date) throws -> Bool { false }
        func rotateSecret(tenant: String, id: String, secret: String, previousUntil: Date) throws -> WebhookEndpoint? { nil }
        func claimDue(now: Date, lease: TimeInterval, limit: Int) throws -> [WebhookDelivery] { [due] }
        func delivered(_ d: WebhookDelivery, status: Int, now: Date) throws { throw BrokerError.storeUnavailable }
        func failed(_ d: WebhookDelivery, status: Int?, error: String, next: Date?) throws { throw BrokerError.storeUnavailable }
        func deliveries(tenant: String, endpoint: String, limit: Int) throws -> [WebhookDeliveryRecord] { [] }
        func queueGrantsExpiring(before: Date, now: Date, limit: Int) throws -> Int { 0 }
        func queueCertificatesExpiring(now: Date, limit: Int) throws -> Int { 0 }
    }

    struct Answers: WebhookSender {
        let status: Int
        func post(_ url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: TimeInterval) throws -> Int { status }
    }

    @Test("an attempt whose outcome the outbox cannot record, delivered or failed: logged and counted (claimed again when its lease runs out)",
          arguments: [(200, "delivered"), (500, "failed")])
    func unrecordedAttemptIsLogged(status: Int, outcome: String) throws {
        let clock = ManualClock()
        let due = WebhookDelivery(tenant: "t1", endpoint: "wh-1", eventID: "evt-1", type: .revoked, url: "https://hooks.example/in", payload: "{}",
                                  secrets: ["whsec_" + Base64URL.encode(Array(repeating: 1, count: 32))], attempts: 0, createdAt: clock.now(),
                                  leaseUntil: clock.now().addingTimeInterval(600))
        let lines = Mutex<[LogLine]>([])
        let webhooks = WebhookService(store: RecordsNothing(due), registry: RegistryCache(store: InMemoryRegistryStore(), maxAge: 60),
                                      sender: Answers(status: status), mac: { _, _ in [0] }, audit: RecordingAuditSink(), clock: clock,
                                      allowHTTP: false, events: { line in lines.withLock { $0.append(line) } })
        #expect(try webhooks.deliverDue() == 1)
        #expect(webhooks.unrecorded.count == 1)
        #expect(lines.withLock { $0.map(\.event.code) }.last == "webhook_unrecorded", "\(outcome)")
    }
}
