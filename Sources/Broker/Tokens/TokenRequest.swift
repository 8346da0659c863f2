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
    /// The broker itself presents the token, with the client's certificate when it has one
    /// (the outbound proxy, a token exchange): a certificate-bound token is no reason to refuse,
    /// and one bound to a replaced certificate is renewed first (BoundTokenRule).
    public var presentedByBroker = false

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
    /// `bound`: the rule for a certificate-bound token (`boundRule(for:)`; refused when unknown).
    public func requirement(policy: RefreshPolicy, lifetime: TimeInterval?, bound: BoundTokenRule = .refuse) -> TokenRequirement {
        TokenRequirement(minTTL: minTTL ?? policy.defaultMinTTL(lifetime: lifetime), scopes: scopes, forceRefresh: forceRefresh, bound: bound)
    }

    /// What a certificate-bound token of `client`'s does for this request.
    public func boundRule(for client: ClientRegistration) -> BoundTokenRule {
        .of(presents: presentedByBroker, handOutAllowed: client.handOutCertificateBound, current: client.tlsClientCertificate?.thumbprint)
    }
}
