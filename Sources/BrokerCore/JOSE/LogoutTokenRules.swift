import Foundation

/// LogoutClaims are what a verified back-channel logout token says: which session (`sid`) or
/// user (`sub`) signed out, and the token's id against replays.
public struct LogoutClaims: Sendable, Equatable {
    public let jti: String
    public let subject: String?
    public let sid: String?
    public let issuedAt: Date

    public init(jti: String, subject: String?, sid: String?, issuedAt: Date) {
        self.jti = jti
        self.subject = subject
        self.sid = sid
        self.issuedAt = issuedAt
    }
}

/// LogoutTokenRules checks the claims of a logout token whose signature was already verified
/// (OpenID Connect Back-Channel Logout 1.0 §2.4, §2.6 steps 3–7). Pure: the time is an argument.
public enum LogoutTokenRules {
    public static let event = "http://schemas.openid.net/event/backchannel-logout"

    /// `maxAge`: how old `iat` may be (the jti replay memory must outlive it).
    public static func check(_ c: [String: Any], issuer: String, clientID: String, now: Date, skew: TimeInterval = 60,
                             maxAge: TimeInterval = 600) throws(JOSEError) -> LogoutClaims {
        guard c["iss"] as? String == issuer else { throw JOSEError("iss is not the client's issuer") }
        let audiences = (c["aud"] as? [String]) ?? (c["aud"] as? String).map { [$0] } ?? []
        guard audiences.contains(clientID) else { throw JOSEError("aud does not contain the client_id") }
        guard let iat = (c["iat"] as? NSNumber)?.doubleValue else { throw JOSEError("iat missing") }
        let t = now.timeIntervalSince1970
        guard iat <= t + skew else { throw JOSEError("iat is in the future") }
        guard iat >= t - maxAge else { throw JOSEError("iat is too old") }
        if let exp = (c["exp"] as? NSNumber)?.doubleValue, exp <= t - skew { throw JOSEError("exp is in the past") }
        guard let jti = c["jti"] as? String, !jti.isEmpty, jti.utf8.count <= 255 else { throw JOSEError("jti missing") }
        guard let events = c["events"] as? [String: Any], events[event] is [String: Any] else {
            throw JOSEError("events has no back-channel logout event")
        }
        guard c["nonce"] == nil else { throw JOSEError("a logout token must not carry a nonce") }
        let sub = (c["sub"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        let sid = (c["sid"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        guard sub != nil || sid != nil else { throw JOSEError("neither sub nor sid") }
        return LogoutClaims(jti: jti, subject: sub, sid: sid, issuedAt: Date(timeIntervalSince1970: iat))
    }
}
