import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The development IdP's fault switches (the refresh fault tests): late or dropped answers after the IdP
/// acted, stalls, introspection and killing old access tokens.
extension DevIdPServer {
    /// The next `count` refresh grants are processed, then answered `delayMS` late (`late`), or
    /// the connection is dropped (`drop`); `drop_unprocessed` drops it without the IdP acting.
    func refreshFault(_ mode: String, delayMS: Int = 0, count: Int = 1) async throws {
        let r = try await call("POST", issuer + "/admin/refresh-fault", json: ["mode": mode, "delay_ms": delayMS, "count": count])
        precondition(r.status == 200, "refresh-fault refused")
    }

    /// Every token request in the next `seconds` is rotated on arrival and answered when the stall ends.
    func stall(seconds: Double) async throws {
        _ = try await call("POST", issuer + "/admin/stall", json: ["seconds": seconds])
    }

    func settings(introspection: Bool? = nil, killOldAccessTokens: Bool? = nil, issParameter: Bool? = nil, par: String? = nil,
                  dpopNonce: Bool? = nil, resourceNonce: Bool? = nil, fapi2: Bool? = nil, idTokenAlgorithms: [String]? = nil,
                  revocation: Bool? = nil, glewlwydNonce: Bool? = nil) async throws {
        var body: [String: Any] = [:]
        if let glewlwydNonce { body["glewlwyd_nonce"] = glewlwydNonce }
        if let revocation { body["revocation"] = revocation }
        if let fapi2 { body["fapi2"] = fapi2 }
        if let idTokenAlgorithms { body["id_token_signing_alg_values_supported"] = idTokenAlgorithms }
        if let dpopNonce { body["dpop_nonce"] = dpopNonce }
        if let resourceNonce { body["resource_nonce"] = resourceNonce }
        if let par { body["par"] = par }
        if let issParameter { body["iss_parameter"] = issParameter }
        if let introspection { body["introspection"] = introspection }
        if let killOldAccessTokens { body["kill_old_access_tokens"] = killOldAccessTokens }
        _ = try await call("POST", issuer + "/admin/settings", json: body)
    }

    /// glewlwyd nonce mode: the client's nonce changes (every client's without `client`).
    func rotateDPoPNonce(client: String? = nil) async throws {
        _ = try await call("POST", issuer + "/admin/dpop-nonce/rotate", json: client.map { ["client_id": $0] } ?? [:])
    }

    /// The failing answer carries exactly `body` (e.g. empty, or HTML).
    func fail(status: Int, body: String, contentType: String? = nil, count: Int, retryAfter: Int? = nil) async throws {
        var o: [String: Any] = ["status": status, "count": count, "body": body]
        if let contentType { o["content_type"] = contentType }
        if let retryAfter { o["retry_after"] = retryAfter }
        _ = try await call("POST", issuer + "/admin/failures", json: o)
    }

    /// Refresh grants received that named a known token, reuse detected, introspections.
    func presentations(client: String) async throws -> (presented: Int, reuse: Int, introspections: Int) {
        let c = try await counters(client: client)
        return (c["refresh_presentations"] as? Int ?? -1, c["reuse_detected"] as? Int ?? -1, c["introspections"] as? Int ?? -1)
    }

    /// The IdP's RFC 7662 answer about `token`, asked as the client.
    func introspection(_ token: String, client: String, secret: String) async throws -> [String: Any] {
        try await call("POST", issuer + "/introspect", body: Data("token=\(token)".utf8), headers: [
            "Authorization": "Basic " + Data("\(client):\(secret)".utf8).base64EncodedString(),
            "Content-Type": "application/x-www-form-urlencoded"]).json
    }
}
