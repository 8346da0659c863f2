import Foundation
import BrokerCore

/// TokenRequest is a worker's ask before the session's client is known: without `minTTL`, the
/// client's refresh policy supplies it.
public struct TokenRequest: Sendable, Equatable {
    public var minTTL: TimeInterval?
    public var scopes: [String]
    public var forceRefresh: Bool

    public init(minTTL: TimeInterval? = nil, scopes: [String] = [], forceRefresh: Bool = false) {
        self.minTTL = minTTL
        self.scopes = scopes
        self.forceRefresh = forceRefresh
    }

    public func requirement(policy: RefreshPolicy) -> TokenRequirement {
        TokenRequirement(minTTL: minTTL ?? policy.minTTL, scopes: scopes, forceRefresh: forceRefresh)
    }
}
