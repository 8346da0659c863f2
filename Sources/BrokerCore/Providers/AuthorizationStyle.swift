/// AuthorizationStyle is how a provider wants its authorization request (RFC 6749 §4.1.1): extra
/// parameters (`access_type=offline`), PKCE (RFC 7636) or not, and how scopes are written.
public struct AuthorizationStyle: Sendable, Equatable {
    public var params: [Parameter] = []
    public var pkce = true
    /// `" "` (RFC 6749 §3.3) or `","`.
    public var scopeSeparator = " "
    /// The scope parameter's name (Slack's user tokens: `user_scope`).
    public var scopeParam = "scope"

    public init() {}
}

/// Parameter is one extra request parameter a descriptor adds, in the order of its name.
public struct Parameter: Sendable, Equatable {
    public let name: String
    public let value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
