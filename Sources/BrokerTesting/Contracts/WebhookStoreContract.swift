import BrokerCore
import Foundation

/// WebhookStoreContract: endpoints are the tenant's alone; an event reaches exactly the
/// tenant's endpoints subscribed to its type; deliveries are claimed one at a time per
/// endpoint and session, in order, leased, retried at the time given or given up; the delivery
/// log is the endpoint's; a rotated secret signs beside the old one until the overlap ends;
/// grant-expiring events are queued once per session, for subscribed tenants. Events are
/// written by the stores whose changes cause them, so the fixture writes them as those do:
/// PostgreSQL only.
public enum WebhookStoreContract {
    public struct Fixture {
        /// Writes the tenant's events as a state change's transaction does.
        public var enqueue: (String, [WebhookEvent]) throws -> Void
        /// An active session of the tenant whose grant ends at the instant; answers its id.
        public var session: (String, Date) throws -> String

        public init(enqueue: @escaping (String, [WebhookEvent]) throws -> Void, session: @escaping (String, Date) throws -> String) {
            (self.enqueue, self.session) = (enqueue, session)
        }
    }

    public static func run(_ store: any WebhookStore, fixture f: Fixture, tenants: (String, String)) throws {
        let now = Date()
        let a = WebhookEndpoint(tenant: tenants.0, id: Contract.unique("whk"), url: "https://a.example/hook", events: [.needsReauth, .revoked],
                                createdAt: now, previousValidUntil: nil)
        let b = WebhookEndpoint(tenant: tenants.1, id: Contract.unique("whk"), url: "https://b.example/hook", events: WebhookEventType.allCases,
                                createdAt: now, previousValidUntil: nil)
        let secretA = "whsec_" + Data(repeating: 1, count: 32).base64EncodedString(), secretB = "whsec_" + Data(repeating: 2, count: 32).base64EncodedString()
        try store.createEndpoint(a, secret: secretA)
        try store.createEndpoint(b, secret: secretB)
        try Contract.expect(try store.endpoints(tenant: tenants.0).map(\.id) == [a.id], "a tenant lists another's endpoint, or not its own")
        try Contract.expect(try !store.deleteEndpoint(tenant: tenants.1, id: a.id, now: now), "an endpoint deleted through another tenant")
        try Contract.expect(try store.rotateSecret(tenant: tenants.1, id: a.id, secret: secretB, previousUntil: now) == nil,
                            "an endpoint rotated through another tenant")

        func session(_ type: WebhookEventType, _ id: String) -> WebhookEvent {
            WebhookEvent(type: type, orderingKey: id, data: ["session_id": id])
        }
        try f.enqueue(tenants.0, [session(.needsReauth, "s1"), session(.revoked, "s1"), session(.grantExpiring, "s1"), session(.revoked, "s2")])
        try f.enqueue(tenants.1, [session(.revoked, "s1")])
        func claim(at t: Date) throws -> [WebhookDelivery] {
            try store.claimDue(now: t, lease: 60, limit: 1000).filter { $0.endpoint == a.id || $0.endpoint == b.id }
        }
        let first = try claim(at: now.addingTimeInterval(1))
        let ofA = first.filter { $0.endpoint == a.id }
        try Contract.expect(ofA.count == 2 && Set(ofA.map { $0.payload.contains("\"s1\"") ? "s1" : "s2" }) == ["s1", "s2"],
                            "not one delivery per session of the subscribed types, the earliest: \(ofA.map(\.type))")
        try Contract.expect(ofA.first { $0.payload.contains("\"s1\"") }?.type == .needsReauth, "a session's later event came first")
        try Contract.expect(first.filter { $0.endpoint == b.id }.map(\.type) == [.revoked] && first.allSatisfy { $0.tenant == ($0.endpoint == a.id ? tenants.0 : tenants.1) },
                            "an event crossed tenants")
        try Contract.expect(ofA.allSatisfy { $0.secrets == [secretA] && $0.url == a.url && $0.attempts == 0 }, "a delivery without its endpoint's secret")
        try Contract.expect(try claim(at: now.addingTimeInterval(2)).isEmpty, "a leased delivery was claimed again, or a later one overtook")

        // Delivered: the session's next event comes due; failed: retried at the time given, or given up.
        let needsReauth = try Contract.some(ofA.first { $0.type == .needsReauth }, "no needs_reauth delivery")
        try store.delivered(needsReauth, status: 204, now: now)
        let second = try claim(at: now.addingTimeInterval(3))
        try Contract.expect(second.map(\.type) == [.revoked] && second[0].payload.contains("\"s1\""), "the session's next event is not due after the first was delivered")
        let ofB = try Contract.some(first.first { $0.endpoint == b.id }, "no delivery of the other tenant")
        try store.failed(ofB, status: 503, error: "HTTP 503", next: now.addingTimeInterval(100))
        // (At +70 the other tenant's leases have run out: those come back, as a dead replica's would.)
        let reclaimed = try claim(at: now.addingTimeInterval(70))
        try Contract.expect(reclaimed.allSatisfy { $0.endpoint != b.id }, "a failed delivery came back before its next attempt")
        // The replica whose lease ran out reports late: the new claim wins, nothing changes.
        try Contract.expect(reclaimed.contains { $0.eventID == second[0].eventID }, "a delivery whose lease ran out was not claimed again")
        try store.delivered(second[0], status: 204, now: now)
        try Contract.expect(try store.deliveries(tenant: tenants.0, endpoint: a.id, limit: 10).first { $0.eventID == second[0].eventID }?.state == .pending,
                            "a stale claim's report was taken over the new claim")
        let retried = try claim(at: now.addingTimeInterval(101)).filter { $0.endpoint == b.id }
        try Contract.expect(retried.map(\.endpoint) == [b.id] && retried[0].attempts == 1, "a failed delivery is not retried at its time, counted")
        try store.failed(retried[0], status: nil, error: "unreachable", next: nil)
        let logB = try store.deliveries(tenant: tenants.1, endpoint: b.id, limit: 10)
        try Contract.expect(logB.map(\.state) == [.failed] && logB[0].lastError == "unreachable" && logB[0].attempts == 2, "the log does not show the given-up delivery")
        let logA = try store.deliveries(tenant: tenants.0, endpoint: a.id, limit: 10)
        try Contract.expect(logA.count == 3 && logA.contains { $0.state == .delivered && $0.lastStatus == 204 && $0.deliveredAt != nil },
                            "the log does not show the endpoint's deliveries")
        try Contract.expect(try store.deliveries(tenant: tenants.1, endpoint: a.id, limit: 10).isEmpty, "another tenant reads the log")

        // Rotation: both secrets sign until the overlap ends.
        let rotated = try store.rotateSecret(tenant: tenants.0, id: a.id, secret: secretB, previousUntil: now.addingTimeInterval(3600))
        try Contract.expect(rotated?.previousValidUntil != nil, "a rotation shows no overlap")
        try f.enqueue(tenants.0, [session(.revoked, "s3")])
        let signed = try claim(at: now.addingTimeInterval(200)).filter { $0.payload.contains("\"s3\"") }
        try Contract.expect(signed.first?.secrets == [secretB, secretA], "during the overlap a delivery is not signed with the new and the old secret")

        // Grants ending soon: once each, for subscribed tenants only.
        let ending = try f.session(tenants.1, now.addingTimeInterval(3600)), endingA = try f.session(tenants.0, now.addingTimeInterval(3600))
        _ = try store.queueGrantsExpiring(before: now.addingTimeInterval(86_400), now: now, limit: 10_000)
        _ = try store.queueGrantsExpiring(before: now.addingTimeInterval(86_400), now: now, limit: 10_000)
        let expiring = try claim(at: now.addingTimeInterval(300)).filter { $0.type == .grantExpiring }
        try Contract.expect(expiring.map(\.endpoint) == [b.id] && expiring[0].payload.contains(ending), "grant expiry not queued once, for the subscribed tenant")
        try Contract.expect(!expiring.contains { $0.payload.contains(endingA) }, "grant expiry queued for a tenant that did not subscribe")

        try Contract.expect(try store.deleteEndpoint(tenant: tenants.0, id: a.id, now: now) && store.endpoints(tenant: tenants.0).isEmpty, "delete")
        try Contract.expect(try store.deliveries(tenant: tenants.0, endpoint: a.id, limit: 10).allSatisfy { $0.state != .pending },
                            "a deleted endpoint's deliveries are still pending")
        try store.deleteEndpoint(tenant: tenants.1, id: b.id, now: now)
    }
}
