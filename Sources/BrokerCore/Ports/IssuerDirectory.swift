import Foundation

/// IssuerDirectory gives a provider's metadata (OpenID Connect Discovery 1.0, or RFC 8414 for a
/// plain OAuth 2.0 server), cached. Endpoints are always taken from here or from the client's
/// provider descriptor, never derived from the issuer URL.
///
/// Every call names the trust of the connection that reads the document: `trustAnchors`, a
/// client's own CA certificates (PEM), or nil for the deployment's. A document read under one
/// trust is never answered to a caller of another, so a client's anchors cannot vouch for what
/// another client sees.
public protocol IssuerDirectory: Sendable {
    func metadata(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata
    /// Reads and checks the document now, neither using nor filling the cache (a
    /// registration's check: what the provider says at this moment).
    @discardableResult
    func verify(_ source: MetadataSource, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata
    /// Reads the document now, bypassing the cache, and keeps what it read in the cache;
    /// callers arriving while such a read is in progress share it. For a check that a stale
    /// document must not decide and that no rate limit may refuse (a callback without RFC 9207
    /// `iss` while the cached document advertises it).
    func current(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata
    /// Forgets the cached document after a check against it failed, so that it is read again
    /// (rate-limited); true when it was forgotten.
    @discardableResult
    func reread(_ source: MetadataSource, trustAnchors: String?, now: Date) -> Bool
}

extension IssuerDirectory {
    /// An OpenID provider's discovery document.
    public func metadata(issuer: String, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        try metadata(.openID(issuer), trustAnchors: trustAnchors, now: now)
    }

    @discardableResult
    public func verify(issuer: String, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata {
        try verify(.openID(issuer), trustAnchors: trustAnchors)
    }

    @discardableResult
    public func reread(issuer: String, trustAnchors: String?, now: Date) -> Bool {
        reread(.openID(issuer), trustAnchors: trustAnchors, now: now)
    }

    public func current(issuer: String, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        try current(.openID(issuer), trustAnchors: trustAnchors, now: now)
    }
}
