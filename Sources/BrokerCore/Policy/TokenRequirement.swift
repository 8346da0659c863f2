import Foundation

/// TokenRequirement is what a worker needs from a token.
public struct TokenRequirement: Sendable, Equatable {
    /// The token must live at least this long when handed out.
    public var minTTL: TimeInterval
    /// Scopes the session must have been granted. Never used to narrow a refresh.
    public var scopes: [String]
    /// Refresh even when the cached token would do (still single-flight).
    public var forceRefresh: Bool
    /// What a token bound to the client's certificate (RFC 8705 §3) does here: refused to a
    /// worker, or renewed when bound to another certificate than the one presented now.
    public var bound: BoundTokenRule

    public init(minTTL: TimeInterval, scopes: [String] = [], forceRefresh: Bool = false, bound: BoundTokenRule = .refuse) {
        self.bound = bound
        self.minTTL = minTTL
        self.scopes = scopes
        self.forceRefresh = forceRefresh
    }
}
