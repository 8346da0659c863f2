@testable import BrokerCore
import Foundation
import Testing

/// Certificate-bound access tokens (RFC 8705 §3): which certificate a token is bound to, who may
/// have one, and when one bound to a replaced certificate is renewed first (§6.3).
@Suite("Certificate-bound tokens")
struct CertificateBoundTokenTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func jwt(_ payload: String) -> String {
        Base64URL.encode(Array(#"{"alg":"ES256","typ":"at+jwt"}"#.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + ".c2ln"
    }

    func session(ttl: TimeInterval = 600, bound: String?) -> Session {
        Session(tenant: "t", id: "ses_1", client: "bank", subject: "u", issuer: "https://i", scopes: ["openid"], accessToken: "at",
                accessExpiresAt: now + ttl, accessLifetime: 3600, refreshToken: "rt", grantedAt: now, createdAt: now, certificateBinding: bound)
    }

    @Test("the binding is the JWT access token's cnf.x5t#S256; an opaque token, a JWT without it, or a DPoP-only cnf is not bound")
    func thumbprint() {
        #expect(CertificateBinding.thumbprint(ofAccessToken: jwt(#"{"sub":"a","cnf":{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}}"#))
            == "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2")
        #expect(CertificateBinding.thumbprint(ofAccessToken: jwt(#"{"cnf":{"jkt":"k","x5t#S256":"x"}}"#)) == "x")
        for token in ["opaque-token", jwt(#"{"sub":"a"}"#), jwt(#"{"cnf":{"jkt":"k"}}"#), jwt(#"{"cnf":{"x5t#S256":""}}"#),
                      jwt(#"{"cnf":{"x5t#S256":7}}"#), jwt(#"{"cnf":"x"}"#), jwt("not json")] {
            #expect(CertificateBinding.thumbprint(ofAccessToken: token) == nil, "\(token)")
        }
    }

    @Test("a hand-out of a bound token is a 409 token_certificate_bound naming the proxy route; an unbound one is served")
    func handOutRefused() {
        let need = TokenRequirement(minTTL: 60)
        guard case .reject(let e) = TokenDecision.decide(session(bound: "x5t-a"), need, now: now) else {
            Issue.record("a bound token was not refused")
            return
        }
        // A conflict: 409 (ErrorResponse), the code the docs list.
        guard case .conflict(let code, _) = e else { Issue.record("not a conflict: \(e)"); return }
        #expect(code == "token_certificate_bound")
        #expect(e.message.contains("/v1/tenants/t/proxy/sessions/ses_1/") && e.message.contains("hand_out_certificate_bound"))
        #expect(TokenDecision.decide(session(bound: nil), need, now: now) == .serve)
        // Refused before any refresh, even when the token would need one.
        #expect(TokenDecision.decide(session(ttl: 10, bound: "x5t-a"), need, now: now) == .reject(e))
        #expect(TokenDecision.decideLocked(session(bound: "x5t-a"), need, seenVersion: 1, now: now) == .reject(e))
    }

    @Test("a refresh that brings a bound token where there was none is refused to a worker all the same")
    func boundAfterRefresh() {
        #expect(TokenDecision.afterRefresh(session(bound: "x5t-a"), TokenRequirement(minTTL: 60), now: now).isReject)
        #expect(TokenDecision.afterRefresh(session(bound: "x5t-a"), TokenRequirement(minTTL: 60, bound: .present(current: "x5t-a")), now: now) == .serve)
    }

    @Test("a token exchange that brings back a certificate-bound token is refused to the worker unless the registration allows it")
    func exchangedBound() {
        let bound = jwt(#"{"sub":"a","cnf":{"x5t#S256":"x5t-a"}}"#)
        let refused = BoundTokenRule.of(presents: false, handOutAllowed: false, current: nil).refusal(exchanged: bound, of: session(bound: nil))
        guard case .conflict(let code, let message)? = refused else { Issue.record("not refused: \(String(describing: refused))"); return }
        #expect(code == "token_certificate_bound" && message.contains("exchanged token") && message.contains("hand_out_certificate_bound"))
        #expect(BoundTokenRule.of(presents: false, handOutAllowed: false, current: nil).refusal(exchanged: jwt(#"{"sub":"a"}"#), of: session(bound: nil)) == nil)
        #expect(BoundTokenRule.of(presents: false, handOutAllowed: true, current: nil).refusal(exchanged: bound, of: session(bound: nil)) == nil)
    }

    @Test("the registration's flag, or the broker presenting the token itself, lets it through")
    func allowed() {
        #expect(BoundTokenRule.of(presents: false, handOutAllowed: false, current: "a") == .refuse)
        #expect(BoundTokenRule.of(presents: false, handOutAllowed: true, current: "a") == .present(current: "a"))
        #expect(BoundTokenRule.of(presents: true, handOutAllowed: false, current: "a") == .present(current: "a"))
        #expect(TokenDecision.decide(session(bound: "a"), TokenRequirement(minTTL: 60, bound: .present(current: "a")), now: now) == .serve)
    }

    @Test("a token bound to a replaced certificate is renewed before use, single-flight: under the lock a row already renewed by another is served")
    func renewedAfterRotation() {
        let presentingNew = TokenRequirement(minTTL: 60, bound: .present(current: "new"))
        #expect(TokenDecision.decide(session(bound: "old"), presentingNew, now: now) == .refresh)
        #expect(TokenDecision.decideLocked(session(bound: "old"), presentingNew, seenVersion: 1, now: now) == .refresh)
        #expect(TokenDecision.decideLocked(session(bound: "new"), presentingNew, seenVersion: 1, now: now) == .serve)
        // The server bound the renewed token to something else again: served, not refreshed in a loop.
        #expect(TokenDecision.afterRefresh(session(bound: "old"), presentingNew, now: now) == .serve)
        // Unbound tokens and unknown certificates never force a renewal.
        #expect(TokenDecision.decide(session(bound: nil), presentingNew, now: now) == .serve)
        #expect(TokenDecision.decide(session(bound: "old"), TokenRequirement(minTTL: 60, bound: .present(current: nil)), now: now) == .serve)
    }

    @Test("a refresh of a client presenting a certificate marks the session with the new token's binding, and clears it for an unbound token")
    func refreshMarks() {
        var ctx = RefreshContext(now: now)
        ctx.presentsCertificate = true
        let grant = TokenGrant(accessToken: jwt(#"{"cnf":{"x5t#S256":"new"}}"#), tokenType: .bearer, expiresIn: 600, refreshToken: nil,
                               scope: nil, idToken: nil)
        #expect(RefreshMachine.applied(grant, to: session(bound: "old"), sentAt: now, ctx).certificateBinding == "new")
        let plain = TokenGrant(accessToken: "opaque", tokenType: .bearer, expiresIn: 600, refreshToken: nil, scope: nil, idToken: nil)
        #expect(RefreshMachine.applied(plain, to: session(bound: "old"), sentAt: now, ctx).certificateBinding == nil)
        // A client that presents no certificate: its tokens are not even read for one.
        #expect(RefreshMachine.applied(grant, to: session(bound: nil), sentAt: now, RefreshContext(now: now)).certificateBinding == nil)
    }
}

extension TokenDecision {
    var isReject: Bool { if case .reject = self { true } else { false } }
}

@Suite("Certificate-bound app tokens")
struct CertificateBoundAppTokenTests {
    @Test("an app token bound to the certificate: refused to a worker (naming the proxy's app route), used by the proxy, granted anew when bound to a replaced certificate")
    func appTokens() {
        guard case .failure(let e) = BoundTokenRule.refuse.appToken(bound: "a", tenant: "t", client: "bank"),
              case .conflict(let code, let message) = e else {
            Issue.record("a bound app token was handed out")
            return
        }
        #expect(code == "token_certificate_bound" && message.contains("/v1/tenants/t/proxy/clients/bank/app/"))
        #expect(BoundTokenRule.refuse.appToken(bound: nil, tenant: "t", client: "bank") == .success(false))
        #expect(BoundTokenRule.present(current: "a").appToken(bound: "a", tenant: "t", client: "bank") == .success(false))
        #expect(BoundTokenRule.present(current: "b").appToken(bound: "a", tenant: "t", client: "bank") == .success(true))
        #expect(BoundTokenRule.present(current: nil).appToken(bound: "a", tenant: "t", client: "bank") == .success(false))
    }
}
