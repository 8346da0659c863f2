/// Role is what an API key may do. Each route names the one role it requires.
public enum Role: String, Sendable, Codable, CaseIterable, Hashable {
    /// Fetches access tokens.
    case worker
    /// Lists, imports and revokes sessions.
    case admin
    /// Starts logins for users.
    case enrol
    /// Manages tenants, clients and API keys.
    case `operator`
    /// Sends API requests through the outbound proxy, which adds the credentials. Receives no
    /// token: a key with only this role is refused (403) on every route that hands one out.
    case proxy
}
