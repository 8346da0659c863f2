import BrokerCore
import BrokerCrypto
import Foundation
import Testing

/// Signed webhooks (Standard Webhooks), delivered from the durable outbox to the development
/// IdP's test receiver over HTTP, checked with the documented verification.
@Suite("Webhooks: signed, durable, in order per session", .serialized)
struct WebhookTests {
    static let mac: StandardWebhooks.MAC = { try HMACSHA256.mac(key: $0, $1) }

    struct Received {
        let id: String, timestamp: String, signature: String, body: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
        var type: String { json["type"] as? String ?? "" }
        var data: [String: String] { json["data"] as? [String: String] ?? [:] }
        func verifies(with secret: String) -> Bool {
            StandardWebhooks.verify(id: id, timestamp: timestamp, header: signature, body: body, secret: secret, now: Date(), mac: WebhookTests.mac)
        }
    }

    func received(_ w: World, _ name: String) async throws -> [Received] {
        let list = try await HTTP.get(w.idp.issuer + "/receiver/\(name)")["received"] as? [[String: Any]] ?? []
        return list.map { Received(id: $0["webhook-id"] as? String ?? "", timestamp: $0["webhook-timestamp"] as? String ?? "",
                                   signature: $0["webhook-signature"] as? String ?? "", body: $0["body"] as? String ?? "") }
    }

    func waitFor(_ w: World, _ name: String, count: Int, within seconds: Double) async throws -> [Received] {
        let deadline = Date().addingTimeInterval(seconds)
        var got = try await received(w, name)
        while got.count < count, Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            got = try await received(w, name)
        }
        return got
    }

    func endpoint(_ w: World, _ name: String, events: [String]? = nil) async throws -> (id: String, secret: String) {
        var body: [String: Any] = ["url": w.idp.issuer + "/receiver/\(name)"]
        if let events { body["events"] = events }
        let r = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/webhooks", key: w.operatorKey, json: body), 201)
        let secret = r["secret"] as? String ?? ""
        TestEnv.secret(secret)
        return (r["id"] as? String ?? "", secret)
    }

    @Test("needs_reauth, revoked, a grant near its end and a finished sign-out: exactly one signed webhook each; a tampered one fails the check; the delivery log shows them")
    func oneSignedWebhookEach() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_WEBHOOK_ALLOW_HTTP": "true", "TOKENBROKER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"])
        defer { w.stop() }
        let base = w.brokers[0].url + "/v1/tenants/\(w.tenant)"
        // Refused input changes nothing.
        try expectStatus(try await HTTP.post(base + "/webhooks", key: w.operatorKey, json: ["url": "ftp://example.com/x"]), 400)
        try expectStatus(try await HTTP.post(base + "/webhooks", key: w.operatorKey, json: ["url": w.idp.issuer + "/r", "events": ["session.nope"]]), 400)
        try expectStatus(try await HTTP.post(base + "/webhooks", key: w.workerKey, json: ["url": w.idp.issuer + "/r"]), 403)
        let (id, secret) = try await endpoint(w, "all")
        #expect(secret.hasPrefix("whsec_") && StandardWebhooks.key(secret)?.count == 32)
        let listed = try expectStatus(try await HTTP.get(base + "/webhooks", key: w.operatorKey), 200)
        #expect(!listed.text.contains(secret) && listed.text.contains(id))

        let refused = try await w.importSession(subject: "wh-refused")
        try await w.idp.revokeSubject("wh-refused")
        try expectStatus(try await w.token(refused, body: ["force_refresh": true]), 409)
        let revoked = try await w.importSession(subject: "wh-revoked")
        try expectStatus(try await HTTP.request("DELETE", base + "/sessions/\(revoked)", key: w.workerKey), 200)
        _ = try await w.importSession(subject: "wh-job")
        try expectStatus(try await HTTP.post(base + "/signouts", key: w.workerKey, json: ["subject": "wh-job"]), 202)
        // A grant that began six and a half days ago ends within a day (the client's 7-day lifetime).
        let t = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "wh-expiring")
        let iso = ISO8601DateFormatter()
        let expiring = try expectStatus(try await HTTP.post(base + "/sessions:import", key: w.workerKey, json: [
            "client": w.client, "subject": "wh-expiring", "refresh_token": t.refresh, "access_token": t.access,
            "expires_at": iso.string(from: Date().addingTimeInterval(3000)),
            "granted_at": iso.string(from: Date().addingTimeInterval(-6.5 * 86_400))]), 201)["session_id"] as! String
        // The grant scan runs a second after a replica starts, then every minute.
        w.brokers.append(try await BrokerServer(env: w.env, name: "broker-webhooks"))

        let got = try await waitFor(w, "all", count: 5, within: 15)
        let byType = Dictionary(grouping: got, by: \.type)
        #expect(byType["session.needs_reauth"]?.map { $0.data["session_id"] } == [refused])
        #expect(byType["session.revoked"]?.map { $0.data["session_id"] }.contains(revoked) == true)
        #expect(byType["session.grant_expiring"]?.map { $0.data["session_id"] } == [expiring])
        #expect(byType["signout.finished"]?.count == 1 && byType["signout.finished"]?.first?.data["revoked"] == "1")
        // The sign-out revoked wh-job's session: a revoked event for it too — one per session, none twice.
        #expect(byType["session.revoked"]?.count == 2 && Set(got.map(\.id)).count == got.count, "\(got.map(\.type))")
        for r in got {
            #expect(r.verifies(with: secret), "\(r.type) does not verify")
            #expect(r.data["tenant"] == w.tenant && r.json["timestamp"] is String)
        }
        // The documented check refuses a tampered body, another secret, and an old timestamp.
        let first = try #require(got.first)
        let tampered = Received(id: first.id, timestamp: first.timestamp, signature: first.signature, body: first.body.replacingOccurrences(of: w.tenant, with: "other"))
        #expect(!tampered.verifies(with: secret))
        #expect(!first.verifies(with: "whsec_" + Data(repeating: 7, count: 32).base64EncodedString()))
        #expect(!StandardWebhooks.verify(id: first.id, timestamp: String(Int(Date().timeIntervalSince1970) - 600), header: first.signature,
                                         body: first.body, secret: secret, now: Date(), mac: Self.mac))
        try await Task.sleep(for: .seconds(1))
        #expect(try await received(w, "all").count == got.count, "exactly one each: nothing sent twice")
        let log = try expectStatus(try await HTTP.get(base + "/webhooks/\(id)/deliveries", key: w.operatorKey), 200)["deliveries"] as? [[String: Any]] ?? []
        #expect(log.count == got.count && log.allSatisfy { $0["state"] as? String == "delivered" && $0["last_status"] as? Int == 204 })
        #expect(try runPSQL("SELECT count(*) FROM webhook_endpoints WHERE secret::text LIKE '%whsec%'").trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                "the secret is sealed")
    }

    @Test("a receiver down for 30 s gets the events afterwards, in order per session; a rotated secret signs beside the old one during the overlap")
    func afterAnOutageInOrder() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_WEBHOOK_ALLOW_HTTP": "true", "TOKENBROKER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
                                           "TOKENBROKER_WEBHOOK_RETRY_CAP_SECONDS": "4"])
        defer { w.stop() }
        let base = w.brokers[0].url + "/v1/tenants/\(w.tenant)"
        let (id, secret) = try await endpoint(w, "down", events: ["session.needs_reauth", "session.revoked"])
        _ = try await HTTP.post(w.idp.issuer + "/admin/receiver", json: ["name": "down", "down": true])
        let s = try await w.importSession(subject: "wh-down")
        try await w.idp.revokeSubject("wh-down")
        try expectStatus(try await w.token(s, body: ["force_refresh": true]), 409)
        try expectStatus(try await HTTP.request("DELETE", base + "/sessions/\(s)", key: w.workerKey), 200)
        try await Task.sleep(for: .seconds(30))
        #expect(try await received(w, "down").isEmpty)
        let pending = try expectStatus(try await HTTP.get(base + "/webhooks/\(id)/deliveries", key: w.operatorKey), 200)["deliveries"] as? [[String: Any]] ?? []
        #expect(pending.count == 2 && pending.allSatisfy { $0["state"] as? String == "pending" })
        #expect(pending.contains { ($0["attempts"] as? Int ?? 0) > 3 && $0["last_status"] as? Int == 503 }, "retried while down: \(pending)")
        _ = try await HTTP.post(w.idp.issuer + "/admin/receiver", json: ["name": "down", "down": false])
        let got = try await waitFor(w, "down", count: 2, within: 15)
        #expect(got.map(\.type) == ["session.needs_reauth", "session.revoked"], "in order: \(got.map(\.type))")
        #expect(got.allSatisfy { $0.verifies(with: secret) })

        // Rotation with an overlap: both secrets sign; receivers on either accept.
        let rotated = try expectStatus(try await HTTP.post(base + "/webhooks/\(id)/rotate", key: w.operatorKey, json: ["overlap_seconds": 3600]), 200)
        let newSecret = rotated["secret"] as? String ?? ""
        TestEnv.secret(newSecret)
        #expect(newSecret != secret && rotated["previous_valid_until"] is String)
        let other = try await w.importSession(subject: "wh-rotated")
        try expectStatus(try await HTTP.request("DELETE", base + "/sessions/\(other)", key: w.workerKey), 200)
        let after = try await waitFor(w, "down", count: 3, within: 10)
        let last = try #require(after.last)
        #expect(last.data["session_id"] == other && last.signature.split(separator: " ").count == 2)
        #expect(last.verifies(with: newSecret) && last.verifies(with: secret))
        try expectStatus(try await HTTP.request("DELETE", base + "/webhooks/\(id)", key: w.operatorKey), 204)
        try expectStatus(try await HTTP.get(base + "/webhooks/\(id)/deliveries", key: w.operatorKey), 404)
    }

    @Test("a receiver on a private or loopback address is not connected to unless allowed: the delivery log says why")
    func privateNetworksRefused() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_WEBHOOK_ALLOW_HTTP": "true"])
        defer { w.stop() }
        let base = w.brokers[0].url + "/v1/tenants/\(w.tenant)"
        let (id, _) = try await endpoint(w, "private", events: ["session.revoked"])
        let s = try await w.importSession(subject: "wh-private")
        try expectStatus(try await HTTP.request("DELETE", base + "/sessions/\(s)", key: w.workerKey), 200)
        var log: [[String: Any]] = []
        for _ in 0..<50 where !(log.first.map { ($0["attempts"] as? Int ?? 0) >= 1 && $0["last_error"] is String } ?? false) {
            try await Task.sleep(for: .milliseconds(100))
            log = try expectStatus(try await HTTP.get(base + "/webhooks/\(id)/deliveries", key: w.operatorKey), 200)["deliveries"] as? [[String: Any]] ?? []
        }
        #expect(log.first?["state"] as? String == "pending" && (log.first?["last_error"] as? String)?.contains("address is not public") == true, "\(log)")
        #expect(try await received(w, "private").isEmpty, "the loopback receiver was reached")
    }
}
