@testable import BrokerOIDC
import BrokerCore
import Foundation
import Testing

/// Token answers read as a provider's descriptor says: form-encoded or JSON, refusals inside an
/// HTTP 200, tokens and the user's id where pointers say, non-standard token types, kept members.
@Suite("Token answers shaped by a descriptor")
struct TokenResponseShapeTests {
    func reply(_ status: Int, _ body: String, type: String? = "application/json") -> BlockingHTTP.Reply {
        BlockingHTTP.Reply(status: status, retryAfter: nil, dpopNonce: nil, body: Data(body.utf8), contentType: type)
    }

    func reading(_ descriptor: String, subject: Bool = true) throws -> TokenResponse.Reading {
        TokenResponse.Reading(try ProviderDescriptor(jsonText: descriptor), subject: subject)
    }

    func error(_ r: BlockingHTTP.Reply, _ reading: TokenResponse.Reading) -> TokenEndpointError? {
        do { _ = try TokenResponse.parse(r, reading); return nil } catch { return error }
    }

    @Test("a form-encoded answer is read by its Content-Type, its comma-separated scopes by the descriptor's separator")
    func formEncoded() throws {
        let r = try reading(#"{"protocol": "oauth2", "authorization": {"scope_separator": ","}, "grant": {"access_token_expires": false}}"#)
        let g = try TokenResponse.parse(reply(200, "access_token=gho_1&scope=repo%2Cgist&token_type=bearer", type: "application/x-www-form-urlencoded; charset=utf-8"), r)
        #expect(g.accessToken == "gho_1" && g.tokenType == .bearer && g.scope == ["repo", "gist"] && g.expiresIn == nil && g.refreshToken == nil)
        // The same body as JSON would not parse: format "json" refuses it.
        let json = try reading(#"{"token_response": {"format": "json"}}"#)
        #expect(error(reply(200, "access_token=gho_1&token_type=bearer", type: "application/x-www-form-urlencoded"), json)
                == .invalidResponse("token endpoint: response is not a JSON object (HTTP 200)"))
    }

    @Test("refusals inside HTTP 200: an error member when the descriptor says so, ok: false always with an ok pointer; a form-encoded 400 keeps its code")
    func refusalsInOK() throws {
        let github = try reading(#"{"protocol": "oauth2", "token_response": {"error_in_ok": true}}"#)
        #expect(error(reply(200, "error=bad_verification_code&error_description=The+code+passed+is+incorrect", type: "application/x-www-form-urlencoded"), github)
                == .oauth(OAuthError(error: "bad_verification_code", description: "The code passed is incorrect", status: 200)))
        let slack = try reading(#"{"protocol": "oauth2", "token_response": {"ok_pointer": "/ok"}}"#)
        #expect(error(reply(200, #"{"ok": false, "error": "invalid_code"}"#), slack) == .oauth(OAuthError(error: "invalid_code", description: nil, status: 200)))
        #expect(error(reply(200, #"{"access_token": "x", "token_type": "Bearer"}"#), slack) == .oauth(OAuthError(error: "unrecognized_error", description: nil, status: 200)),
                "an answer without ok: true is no success")
        #expect(error(reply(400, "error=invalid_grant", type: "application/x-www-form-urlencoded"), TokenResponse.Reading())
                == .oauth(OAuthError(error: "invalid_grant", description: nil, status: 400)))
        // Without the descriptor's word, an error member in a 200 with a token is not looked at.
        #expect(try TokenResponse.parse(reply(200, #"{"access_token": "x", "token_type": "Bearer", "error": "ignored"}"#), TokenResponse.Reading()).accessToken == "x")
    }

    @Test("Slack's user token: nested pointers, token_type user as the default Bearer, the user's id from the answer, the team kept")
    func nested() throws {
        let r = try reading("""
            {"protocol": "oauth2", "token_response": {"ok_pointer": "/ok", "access_token": "/authed_user/access_token",
              "token_type": "/authed_user/token_type", "refresh_token": "/authed_user/refresh_token", "expires_in": "/authed_user/expires_in",
              "scope": "/authed_user/scope", "default_token_type": "Bearer", "keep": {"team": "/team"}},
             "authorization": {"scope_separator": ","}, "subject": {"from": "token_response", "pointer": "/authed_user/id"}}
            """)
        let body = #"{"ok": true, "access_token": "xoxb-bot", "token_type": "bot", "team": {"id": "T1", "name": "Acme"},"# +
            #" "authed_user": {"id": "U1", "scope": "chat:write,users:read", "access_token": "xoxp-user", "token_type": "user", "expires_in": "43200", "refresh_token": "xoxe-1"}}"#
        let g = try TokenResponse.parse(reply(200, body), r)
        #expect(g.accessToken == "xoxp-user" && g.tokenType == .bearer && g.expiresIn == 43_200 && g.refreshToken == "xoxe-1")
        #expect(g.scope == ["chat:write", "users:read"] && g.subject == "U1" && g.metadata == #"{"team":{"id":"T1","name":"Acme"}}"#)
        // A refresh's answer need not carry the id; a code exchange's must.
        let noID = body.replacingOccurrences(of: #""id": "U1", "#, with: "")
        let refreshing = try reading("""
            {"protocol": "oauth2", "token_response": {"ok_pointer": "/ok", "access_token": "/authed_user/access_token", "default_token_type": "Bearer"},
             "subject": {"from": "token_response", "pointer": "/authed_user/id"}}
            """, subject: false)
        #expect(try TokenResponse.parse(reply(200, noID), refreshing).subject == nil)
        #expect(error(reply(200, noID), r) == .invalidResponse("token endpoint: no user id at /authed_user/id"))
    }

    @Test("an unknown token type without a default, a missing access token, and an oversized kept member are refused")
    func refused() throws {
        #expect(error(reply(200, #"{"access_token": "x", "token_type": "mac"}"#), TokenResponse.Reading()) == .invalidResponse("token endpoint: unknown token_type"))
        #expect(error(reply(200, #"{"token_type": "Bearer"}"#), TokenResponse.Reading()) == .invalidResponse("token endpoint: no access token at /access_token"))
        let keep = try reading(#"{"token_response": {"keep": {"big": "/big"}}}"#)
        let big = String(repeating: "a", count: 5000)
        #expect(error(reply(200, #"{"access_token": "x", "token_type": "Bearer", "big": "\#(big)"}"#), keep)
                == .invalidResponse("token endpoint: the member kept as 'big' is over 4096 bytes"))
        // A grant's own lifetime as a string (Intuit's x_refresh_token_expires_in is a number; some send strings).
        let life = try reading(#"{"token_response": {"grant_expires_in": "/x_refresh_token_expires_in"}}"#)
        #expect(try TokenResponse.parse(reply(200, #"{"access_token": "x", "token_type": "bearer", "x_refresh_token_expires_in": "8726400"}"#), life).grantExpiresIn == 8_726_400)
    }
}
