/// TokenExchange is a worker's ask for a narrower token made from its session's (RFC 8693 §2.1):
/// for `audience` and/or `resource` (RFC 8707), with `scopes` (a subset of the session's, or the
/// IdP refuses), and with `act` an actor token naming the calling principal.
public struct TokenExchange: Sendable, Hashable {
    public let audience: String?
    public let resource: String?
    public let scopes: [String]
    public let act: Bool

    public init(audience: String?, resource: String?, scopes: [String], act: Bool) {
        self.audience = audience
        self.resource = resource
        self.scopes = scopes
        self.act = act
    }

    /// RFC 8693 §3 token type identifiers.
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    public static let jwtTokenType = "urn:ietf:params:oauth:token-type:jwt"
    public static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"
}
