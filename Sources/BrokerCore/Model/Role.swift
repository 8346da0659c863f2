/// Role is what an API key may do (spec §3). Each route names the one role it requires.
public enum Role: String, Sendable, Codable, CaseIterable, Hashable {
    /// Fetches access tokens (spec §4.1).
    case worker
    /// Lists, imports and revokes sessions (spec §4.3).
    case admin
    /// Starts logins for users (spec §4.2).
    case enrol
    /// Manages tenants, clients and API keys.
    case `operator`
    /// Sends API requests through the outbound proxy, which adds the credentials. Receives no
    /// token: a key with only this role is refused (403) on every route that hands one out.
    case proxy
}
