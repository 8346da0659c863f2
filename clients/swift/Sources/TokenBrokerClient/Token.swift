/// A token as the broker handed it out.
public struct Token: Sendable, Equatable, CustomStringConvertible {
    public let accessToken: String
    public let tokenType: String
    /// RFC 3339 to the millisecond, the broker's clock.
    public let expiresAt: String
    /// Whole seconds left when the broker answered.
    public let expiresIn: Int
    public let scope: String
    public let sessionID: String
    public let subject: String

    init?(json o: [String: Any]) {
        guard let at = o["access_token"] as? String, let exp = o["expires_at"] as? String,
              let expiresIn = o["expires_in"] as? Int, let sid = o["session_id"] as? String,
              let sub = o["subject"] as? String else { return nil }
        (accessToken, expiresAt, self.expiresIn, sessionID, subject) = (at, exp, expiresIn, sid, sub)
        tokenType = o["token_type"] as? String ?? "Bearer"
        scope = o["scope"] as? String ?? ""
    }

    /// Never the token itself.
    public var description: String { "Token(session: \(sessionID), subject: \(subject), expires_at: \(expiresAt))" }
}
