/// A client's own token (client credentials, docs/app-tokens.md): no session, no subject.
public struct AppToken: Sendable, Equatable, CustomStringConvertible {
    public let accessToken: String
    public let tokenType: String
    /// RFC 3339 to the millisecond, the broker's clock.
    public let expiresAt: String
    /// Whole seconds left when the broker answered.
    public let expiresIn: Int
    public let scope: String
    public let client: String
    /// Changes with every new grant of the stored token.
    public let version: Int

    init?(json o: [String: Any]) {
        guard let at = o["access_token"] as? String, let exp = o["expires_at"] as? String, let expiresIn = o["expires_in"] as? Int,
              let client = o["client"] as? String, let version = o["version"] as? Int else { return nil }
        (accessToken, expiresAt, self.expiresIn, self.client, self.version) = (at, exp, expiresIn, client, version)
        tokenType = o["token_type"] as? String ?? "Bearer"
        scope = o["scope"] as? String ?? ""
    }

    /// Never the token itself.
    public var description: String { "AppToken(client: \(client), version: \(version), expires_at: \(expiresAt))" }
}
