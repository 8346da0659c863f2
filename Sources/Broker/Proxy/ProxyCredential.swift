import BrokerCore

/// ProxyCredential is the token a proxied call carries, and what it takes to prove and renew
/// it: a session's (its id and kept metadata) or the client's app token (its ask and version).
struct ProxyCredential: Sendable {
    var token: String
    var type: TokenType
    let client: String
    /// The session, for a session's token; nil for an app token.
    let session: String?
    /// The session's kept members of its provider's answer (for `{member}`s of the base URL).
    let metadata: String?
    /// For an app token: what was asked, and the version handed out (a renewal names it).
    let ask: AppTokenAsk?
    var version: Int64?
}
