import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// How a personality's token endpoint answers: the members of its answer (Personality.Shape),
/// JSON or form-encoded, and its refusals (RFC 6749 §5.2, inside HTTP 200, or Slack's `ok`).
extension DevIdP {
    /// The answer to a code exchange (`refreshed` false) or a refresh, in the provider's shape.
    func personalityBody(_ p: Personality, _ issued: [PersonalityIssue], subject: String, clientID: String, root: String,
                         refreshed: Bool) -> [String: Any] {
        let user = p.userID(subject)
        switch p.shape {
        case .standard: return members(p, issued[0])
        case .microsoft:
            var b = members(p, issued[0])
            b["ext_expires_in"] = b["expires_in"]
            return b
        case .box:
            return members(p, issued[0]).merging(["restricted_to": [Any](),
                                                   "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"]) { a, _ in a }
        case .bitbucket:
            var b = members(p, issued[0])
            b["scopes"] = b.removeValue(forKey: "scope")
            return b
        case .asana:
            let login = String(subject.split(separator: "@").first ?? "")
            return members(p, issued[0]).merging(["data": ["id": p.number(subject), "gid": user, "name": login,
                                                           "email": subject.contains("@") ? subject : subject + "@example.test"]]) { a, _ in a }
        case .keycloak:
            let offline = Personality.scopes(issued[0].scope).contains("offline_access")
            return members(p, issued[0]).merging(["refresh_expires_in": offline ? 0 : 1800, "not-before-policy": 0,
                                                   "session_state": p.userIDText("session:" + subject)]) { a, _ in a }
        case .gitlab:
            return members(p, issued[0]).merging(["created_at": Int(Date().timeIntervalSince1970)]) { a, _ in a }
        case .hubspot:
            var b = members(p, issued[0])
            b["scopes"] = Personality.scopes(issued[0].scope)
            b["scope"] = nil
            return b.merging(["hub_id": Self.hubID, "user_id": user]) { a, _ in a }
        case .dropbox:
            // A refresh answers the access token, its type and lifetime, nothing else.
            if refreshed { return members(p, issued[0]).filter { ["access_token", "token_type", "expires_in"].contains($0.key) } }
            return members(p, issued[0]).merging(["account_id": user, "uid": String(p.number(subject))]) { a, _ in a }
        case .notion:
            return members(p, issued[0]).merging([
                "bot_id": p.userIDText("bot:" + clientID), "workspace_id": p.userIDText("workspace:" + subject),
                "workspace_name": "Development workspace", "workspace_icon": NSNull(), "duplicated_template_id": NSNull(),
                "owner": ["type": "user", "user": ["object": "user", "id": user]], "request_id": p.userIDText("request:" + issued[0].access),
            ]) { a, _ in a }
        case .salesforce:
            // The signature proves `id` and `issued_at` came from the provider: HMAC-SHA256 of
            // their concatenation keyed with the client secret, in base64.
            let id = root + "/p/" + p.name + "/id/00D000000000001AAA/" + p.userIDText(subject)
            let issuedAt = String(Int(Date().timeIntervalSince1970 * 1000))
            let secret = state.withLock { $0.clients[clientID]?.secret } ?? ""
            let mac = DevIdPCrypto.must { try HMACSHA256.mac(key: Array(secret.utf8), Array((id + issuedAt).utf8)) }
            return members(p, issued[0]).merging(["instance_url": root + "/p/" + p.name, "id": id, "issued_at": issuedAt,
                                                   "signature": Data(mac).base64EncodedString()]) { a, _ in a }
        case .slack:
            var b: [String: Any] = ["ok": true, "app_id": "A0DEVIDP001", "team": ["id": "T0DEVIDP001", "name": "Development"],
                                    "enterprise": NSNull(), "is_enterprise_install": false]
            if refreshed { return b.merging(members(p, issued[0])) { _, new in new } }
            var authed: [String: Any] = ["id": user]
            for g in issued {
                if g.kind == "user" { authed.merge(members(p, g)) { _, new in new } }
                else { b.merge(members(p, g).merging(["bot_user_id": p.userIDText("bot:" + clientID)]) { a, _ in a }) { _, new in new } }
            }
            b["authed_user"] = authed
            return b
        }
    }

    /// The RFC 6749 §5.1 members of one grant, the personality's way.
    private func members(_ p: Personality, _ g: PersonalityIssue) -> [String: Any] {
        var b: [String: Any] = ["access_token": g.access, "token_type": g.kind ?? p.tokenType,
                                "scope": Personality.scopes(g.scope).joined(separator: p.scopeSeparator)]
        if p.accessExpires && p.sendsExpiresIn { b["expires_in"] = p.expiresInString ? String(g.ttl) : g.ttl as Any }
        if let r = g.refresh {
            b["refresh_token"] = r
            if let l = p.grantLifetime { b[l.name] = g.grantExpiresIn ?? l.seconds }
        }
        if let id = g.idToken { b["id_token"] = id }
        return b
    }

    /// `body` as JSON or form-encoded, never cached (RFC 6749 §5.1).
    func personalityAnswer(_ p: Personality, _ req: HTTPRequest, _ body: [String: Any], status: Int = 200) -> HTTPResponse {
        let form = switch p.answer {
        case .json: false
        case .form: true
        case .formUnlessJSONAccepted: !(req.header("accept") ?? "").lowercased().contains("application/json")
        }
        guard form else { return json(status, body).uncacheable() }
        let text = FormEncoding.body(body.sorted { $0.key < $1.key }.map { ($0.key, "\($0.value)") })
        return HTTPResponse(status: status, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(text.utf8)).uncacheable()
    }

    /// A refusal in the personality's style, with the provider's `code`.
    func refusal(_ p: Personality, _ req: HTTPRequest, code: String, status: Int = 400, description: String) -> HTTPResponse {
        switch p.errors {
        case .rfc6749: personalityAnswer(p, req, ["error": code, "error_description": description], status: status)
        case .inOK:   // GitHub's troubleshooting page, which names each code, as error_uri
            personalityAnswer(p, req, ["error": code, "error_description": description,
                                       "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"])
        case .microsoft:
            personalityAnswer(p, req, Self.microsoftRefusal(code, description), status: status)
        case .slack: json(200, ["ok": false, "error": code])
        case .hubspot:
            json(status, ["error": code, "error_description": description, "category": "VALIDATION_ERROR", "message": description,
                          "correlationId": UUID().uuidString.lowercased()]).uncacheable()
        }
    }

    /// Microsoft's refusal: the AADSTS code of `error` first in `error_description` and in
    /// `error_codes`, with `timestamp`, `trace_id` and `correlation_id`.
    static func microsoftRefusal(_ code: String, _ description: String) -> [String: Any] {
        let aadsts = ["invalid_grant": 70000, "invalid_client": 7_000_215, "unsupported_grant_type": 70003][code] ?? 900_144
        return ["error": code, "error_description": "AADSTS\(aadsts): \(description)", "error_codes": [aadsts],
                "timestamp": ISO8601DateFormatter().string(from: Date()), "trace_id": UUID().uuidString.lowercased(),
                "correlation_id": UUID().uuidString.lowercased()]
    }

    /// The HubSpot account (portal) every user of the HubSpot personality belongs to.
    static let hubID = 1_234_567
}
