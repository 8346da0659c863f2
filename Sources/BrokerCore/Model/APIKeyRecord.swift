import Foundation

/// APIKeyRecord is what the key listing shows of one API key: its principal (roles, tenants,
/// revocation, expiry) and when it was made and last used — never its secret or hash.
public struct APIKeyRecord: Sendable, Equatable {
    public let principal: Principal
    public let createdAt: Date
    /// The last use as written in bulk (about a second late at most); nil: never used.
    public let lastUsedAt: Date?

    public init(principal: Principal, createdAt: Date, lastUsedAt: Date?) {
        self.principal = principal
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}
