import Foundation

/// TokenRequirement is what a worker needs from a token.
public struct TokenRequirement: Sendable, Equatable {
    /// The token must live at least this long when handed out.
    public var minTTL: TimeInterval
    /// Scopes the session must have been granted. Never used to narrow a refresh.
    public var scopes: [String]
    /// Refresh even when the cached token would do (still single-flight).
    public var forceRefresh: Bool

    public init(minTTL: TimeInterval, scopes: [String] = [], forceRefresh: Bool = false) {
        self.minTTL = minTTL
        self.scopes = scopes
        self.forceRefresh = forceRefresh
    }
}
