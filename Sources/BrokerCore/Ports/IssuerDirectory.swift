import Foundation

/// IssuerDirectory gives an issuer's metadata (OpenID Connect Discovery 1.0), cached. Endpoints
/// are always taken from here, never derived from the issuer URL.
///
/// Every call names the trust of the connection that reads the document: `trustAnchors`, a
/// client's own CA certificates (PEM), or nil for the deployment's. A document read under one
/// trust is never answered to a caller of another, so a client's anchors cannot vouch for what
/// another client sees.
public protocol IssuerDirectory: Sendable {
    func metadata(issuer: String, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata
    /// Reads and checks the issuer's document now, neither using nor filling the cache (a
    /// registration's check: what the IdP says at this moment).
    @discardableResult
    func verify(issuer: String, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata
    /// Reads the issuer's document now, bypassing the cache, and keeps what it read in the cache;
    /// callers arriving while such a read is in progress share it. For a check that a stale
    /// document must not decide and that no rate limit may refuse (a callback without RFC 9207
    /// `iss` while the cached document advertises it).
    func current(issuer: String, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata
    /// Forgets the cached document after a check against it failed, so that it is read again
    /// (rate-limited); true when it was forgotten.
    @discardableResult
    func reread(issuer: String, trustAnchors: String?, now: Date) -> Bool
}
