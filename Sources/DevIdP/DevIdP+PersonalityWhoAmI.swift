import BrokerHTTP
import Foundation

/// A personality's "who am I" endpoint (Personality.WhoAmI): the user an access token was
/// issued for, in the provider's words, and the provider's refusal of a bad token.
extension DevIdP {
    func personalityWhoAmI(_ p: Personality, _ req: HTTPRequest) -> HTTPResponse {
        if case .hubspot = p.whoAmI { return hubspotIntrospect(p, req) }
        let token: String? = switch p.whoAmI {
        case .slack: Self.bearer(req) ?? Self.fields(req)["token"]
        default: Self.bearer(req)
        }
        guard let a = personalityAccess(p, token) else { return Self.whoAmIRefusal(p) }
        let id = p.userID(a.subject), idText = p.userIDText(a.subject)
        if case .salesforce = p.whoAmI, req.parameters["user"] != idText { return json(403, ["error": "bad_id"]) }
        state.withLock { $0.stats[a.client, default: .init()].whoAmI += 1 }
        let email = a.subject.contains("@") ? a.subject : a.subject + "@example.test"
        let login = String(a.subject.split(separator: "@").first ?? "")
        switch p.whoAmI {
        case .userinfo:
            var claims: [String: Any] = ["sub": idText, "email": email, "email_verified": true, "name": login]
            if let tenant = p.tenant(of: a.subject) { claims["tid"] = tenant }
            return json(200, claims)
        case .github:
            return json(200, ["id": id, "login": login, "name": login, "email": email, "type": "User"])
        case .slack:
            return json(200, ["ok": true, "url": "https://development.slack.test/", "team": "Development", "user": login,
                              "team_id": "T0DEVIDP001", "user_id": id])
        case .dropbox:
            return json(200, ["account_id": id, "email": email, "email_verified": true,
                              "name": ["display_name": login, "given_name": login, "surname": "", "familiar_name": login, "abbreviated_name": ""]])
        case .salesforce:
            return json(200, ["user_id": id, "organization_id": "00D000000000001AAA", "username": email, "email": email])
        case .hubspot:
            return hubspotIntrospect(p, req)
        case .json(_, _, let key, let wrapper):
            var o: [String: Any] = [key: id, "email": email, "username": login]
            if p.hasTenants {   // Microsoft Graph
                o["userPrincipalName"] = email
                o["mail"] = email
            }
            return json(200, wrapper.map { [$0: o] } ?? o)
        }
    }

    /// The provider's answer to a missing, unknown, expired or revoked token.
    static func whoAmIRefusal(_ p: Personality) -> HTTPResponse {
        switch p.whoAmI {
        case .github: return .json(401, #"{"message": "Bad credentials", "status": "401"}"#)
        case .slack: return .json(200, #"{"ok": false, "error": "invalid_auth"}"#)
        case .dropbox: return dropboxRefusal
        default:
            var r = HTTPResponse.json(401, #"{"error": "invalid_token"}"#)
            r.headers.append(("WWW-Authenticate", "Bearer error=\"invalid_token\""))
            return r
        }
    }
}
