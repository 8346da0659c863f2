@testable import Broker
import BrokerCore
import Foundation
import Testing

/// The session a login's callback stores, from the code exchange's grant.
@Suite("A login's new session")
struct LoginSessionTests {
    /// An access token that is a JWT (RFC 9068) expiring at `exp`; unsigned: the broker reads
    /// its exp only to shorten an expiry, never verifying it.
    static func accessJWT(exp: Int) -> String {
        func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }
        return part(#"{"alg":"ES256","typ":"at+jwt"}"#) + "." + part(#"{"sub":"alice","exp":\#(exp)}"#) + "." + part("signature")
    }

    @Test("expires_in later than the access token's own exp: the exp wins, and the refresh comes ahead of it")
    func expiryClampedToExp() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let login = PendingLogin(id: "login-1", tenant: "t1", client: "app", issuer: "https://idp.example", stateHash: Array(repeating: 7, count: 32),
                                 verifier: "verifier", nonce: "nonce", scopes: ["openid"], redirectAfter: nil, createdAt: now,
                                 expiresAt: now.addingTimeInterval(600))
        let exp = Int(now.timeIntervalSince1970) + 60
        let grant = TokenGrant(accessToken: Self.accessJWT(exp: exp), tokenType: .bearer, expiresIn: 3600, refreshToken: "rt", scope: nil, idToken: nil)
        let verified = VerifiedIDToken(subject: "alice", issuedAt: now, expiresAt: now.addingTimeInterval(300),
                                       claims: IdentityClaims(sid: nil, email: nil, authTime: nil))
        let client = ClientRegistration(tenant: "t1", id: "app", issuer: "https://idp.example", clientID: "app",
                                        authMethod: .clientSecretBasic, redirectURI: "https://b/cb", scopes: ["openid"])
        let s = LoginService.session(from: grant, subject: verified.subject, claims: verified.claims, login: login, client: client, now: now)
        #expect(s.accessExpiresAt == Date(timeIntervalSince1970: Double(exp)))
        #expect(try #require(s.nextRefreshAt) < Date(timeIntervalSince1970: Double(exp)))
        // An opaque token keeps expires_in.
        let opaque = TokenGrant(accessToken: "opaque-token", tokenType: .bearer, expiresIn: 3600, refreshToken: "rt", scope: nil, idToken: nil)
        #expect(LoginService.session(from: opaque, subject: verified.subject, claims: verified.claims, login: login, client: client, now: now).accessExpiresAt
                == now.addingTimeInterval(3600))
    }

    @Test("a grant without a refresh token ends with its access token (grant_expires_at, scheduled then); one that never expires is never scheduled; kept members stored")
    func grantsOfEveryKind() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let login = PendingLogin(id: "login-2", tenant: "t1", client: "gh", issuer: "https://github.example", stateHash: Array(repeating: 7, count: 32),
                                 verifier: "verifier", nonce: "nonce", scopes: ["repo"], redirectAfter: nil, createdAt: now,
                                 expiresAt: now.addingTimeInterval(600))
        var client = ClientRegistration(tenant: "t1", id: "gh", issuer: "https://github.example", clientID: "gh", authMethod: .clientSecretPost,
                                        redirectURI: "https://b/cb", scopes: ["repo"])
        client.descriptor = try ProviderDescriptor(jsonText: #"{"protocol": "oauth2", "grant": {"refresh_token": "none"}}"#)
        let expiring = TokenGrant(accessToken: "gho_1", tokenType: .bearer, expiresIn: 28_800, refreshToken: "ghr_ignored", scope: nil, idToken: nil,
                                  metadata: #"{"login":"octocat"}"#)
        let s = LoginService.session(from: expiring, subject: "583231", claims: IdentityClaims(), login: login, client: client, now: now)
        #expect(s.refreshToken == nil, "a provider without refresh tokens: none is kept, whatever came")
        #expect(s.accessExpiresAt == now + 28_800 && s.grantExpiresAt == now + 28_800 && s.nextRefreshAt == now + 28_800)
        #expect(s.metadata == #"{"login":"octocat"}"# && s.subject == "583231")
        client.descriptor = try ProviderDescriptor(jsonText: #"{"protocol": "oauth2", "grant": {"refresh_token": "none", "access_token_expires": false}}"#)
        let forever = TokenGrant(accessToken: "gho_2", tokenType: .bearer, expiresIn: nil, refreshToken: nil, scope: nil, idToken: nil)
        let f = LoginService.session(from: forever, subject: "583231", claims: IdentityClaims(), login: login, client: client, now: now)
        #expect(f.accessNeverExpires && f.nextRefreshAt == nil && f.accessLifetime == nil && f.grantExpiresAt == nil,
                "a token that never expires, without a refresh token: no end to warn of")
    }
}
