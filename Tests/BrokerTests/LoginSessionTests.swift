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
}
