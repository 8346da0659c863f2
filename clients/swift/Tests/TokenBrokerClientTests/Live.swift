import Foundation
@testable import TokenBrokerClient
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The live broker and development IdP that scripts/clients.sh started (scripts/live.sh).
enum Live {
    static func env(_ name: String) -> String {
        guard let v = ProcessInfo.processInfo.environment[name] else { fatalError("\(name) unset: run scripts/clients.sh swift") }
        return v
    }
    static let broker = URL(string: env("LIVE_BROKER"))!, idp = env("LIVE_IDP")
    static let tenant = env("LIVE_TENANT"), key = env("LIVE_KEY"), idpClient = env("LIVE_IDP_CLIENT")

    @discardableResult
    static func call(_ method: String, _ url: String, _ body: [String: Any]? = nil, key: String? = nil) async throws -> [String: Any] {
        var req = URLRequest(url: URL(string: url)!)
        req.httpMethod = method
        if let body { req.httpBody = try JSONSerialization.data(withJSONObject: body) }
        if let key { req.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: req)
        guard let status = (response as? HTTPURLResponse)?.statusCode, status < 300 else { throw URLError(.badServerResponse) }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    /// A fresh subject with a grant at the IdP, imported into the broker.
    static func newSession() async throws -> (subject: String, session: String) {
        let subject = "swift-\(UUID().uuidString.prefix(8).lowercased())"
        let grants = try await call("POST", "\(idp)/admin/grants", ["client_id": idpClient, "subjects": [subject]])
        let rt = (grants["refresh_tokens"] as? [String: String])?[subject] ?? ""
        let s = try await call("POST", "\(broker.absoluteString)/v1/tenants/\(tenant)/sessions:import",
                               ["client": "app", "subject": subject, "refresh_token": rt], key: key)
        return (subject, s["session_id"] as? String ?? "")
    }

    static func refreshes() async throws -> Int {
        try await call("GET", "\(idp)/stats?client_id=\(idpClient)")["refreshes_ok"] as? Int ?? -1
    }

    static func failTokenEndpoint(status: Int, count: Int, retryAfter: Int) async throws {
        try await call("POST", "\(idp)/admin/failures", ["status": status, "count": count, "retry_after": retryAfter])
    }

    static func revokeAtIdP(_ subject: String) async throws {
        try await call("POST", "\(idp)/admin/revoke-subject", ["sub": subject])
    }

    static func revokeInBroker(_ session: String) async throws {
        try await call("DELETE", "\(broker.absoluteString)/v1/tenants/\(tenant)/sessions/\(session)", key: key)
    }

    static func client(maxWait: Double = 30) -> TokenBroker {
        TokenBroker(baseURL: broker, apiKey: key, tenant: tenant, maxWait: maxWait)
    }
}
