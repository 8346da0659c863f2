import Foundation

/// IDTokenRules checks the claims of an ID token whose signature was already verified (OIDC
/// Core §3.1.3.7 steps 2–11). Pure: the time is an argument.
public enum IDTokenRules {
    public static func check(_ c: [String: Any], _ e: IDTokenExpectation, now: Date) throws(JOSEError) -> VerifiedIDToken {
        if let template = e.issuerTemplate {
            // The tenant is the token's own; it must make the template's issuer exactly.
            guard let tid = c["tid"] as? String, !tid.isEmpty, !tid.contains("/"), tid.utf8.count <= 64,
                  c["iss"] as? String == template.replacingOccurrences(of: ProviderDescriptor.tenantPlaceholder, with: tid) else {
                throw JOSEError("iss is not the issuer template with the token's tid")
            }
        } else {
            guard c["iss"] as? String == e.issuer else { throw JOSEError("iss is not the issuer") }
        }
        let audiences: [String]
        if let one = c["aud"] as? String { audiences = [one] } else if let many = c["aud"] as? [String] { audiences = many } else {
            throw JOSEError("aud missing")
        }
        guard audiences.contains(e.clientID) else { throw JOSEError("aud does not contain the client_id") }
        if let azp = c["azp"] {
            guard azp as? String == e.clientID else { throw JOSEError("azp is not the client_id") }
        } else if audiences.count > 1 {
            throw JOSEError("azp missing with several audiences")
        }
        guard let exp = number(c["exp"]) else { throw JOSEError("exp missing") }
        guard let iat = number(c["iat"]) else { throw JOSEError("iat missing") }
        let t = now.timeIntervalSince1970
        guard exp > t - e.skew else { throw JOSEError("exp is in the past") }
        guard iat <= t + e.skew else { throw JOSEError("iat is in the future") }
        guard let sub = c["sub"] as? String, !sub.isEmpty, sub.utf8.count <= 255 else { throw JOSEError("sub missing") }
        if let expected = e.subject, sub != expected { throw JOSEError("sub differs from the session's subject") }
        if let nonce = e.nonce {
            guard let got = c["nonce"] as? String else { throw JOSEError("nonce missing") }
            guard constantTimeEqual(got, nonce) else { throw JOSEError("nonce does not match the login") }
        }
        // Present but meaningless (0, or before 1970) is absent: never stored as 1970-01-01.
        let authTime = number(c["auth_time"]).flatMap { $0 > 0 ? Date(timeIntervalSince1970: $0) : nil }
        return VerifiedIDToken(subject: sub, issuedAt: Date(timeIntervalSince1970: iat), expiresAt: Date(timeIntervalSince1970: exp),
                               claims: IdentityClaims(sid: c["sid"] as? String, email: c["email"] as? String, authTime: authTime))
    }

    /// A NumericDate (RFC 7519 §2): a JSON number, never a string.
    static func number(_ v: Any?) -> Double? {
        (v as? NSNumber)?.doubleValue
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in x.indices { d |= x[i] ^ y[i] }
        return d == 0
    }
}
