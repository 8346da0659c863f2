import Foundation
import BrokerCore

/// TokenRequest is a worker's ask before the session's client is known: without `minTTL`, the
/// client's refresh policy supplies it.
public struct TokenRequest: Sendable, Equatable {
    public var minTTL: TimeInterval?
    public var scopes: [String]
    public var forceRefresh: Bool
    /// Requests the worker will make with a DPoP-bound token: a proof is minted for each.
    public var dpop: [DPoPTarget]
    /// Recorded in the audit trail as a hand-out to the principal. False for the outbound
    /// proxy's use of a token, which the principal never sees (the proxy audits its call).
    public var audited = true

    /// The most proofs one hand-out mints.
    public static let maxProofs = 16

    public init(minTTL: TimeInterval? = nil, scopes: [String] = [], forceRefresh: Bool = false, dpop: [DPoPTarget] = []) {
        self.minTTL = minTTL
        self.scopes = scopes
        self.forceRefresh = forceRefresh
        self.dpop = dpop
    }

    /// Without a min_ttl of its own, the request gets the client's policy's default
    /// (RefreshPolicy.defaultMinTTL): never more than half the refresh lead, so that a worker
    /// that names none always gets a token, and gets it from a session the timer keeps fresh.
    public func requirement(policy: RefreshPolicy, lifetime: TimeInterval?) -> TokenRequirement {
        TokenRequirement(minTTL: minTTL ?? policy.defaultMinTTL(lifetime: lifetime), scopes: scopes, forceRefresh: forceRefresh)
    }
}
