import Foundation

/// IssuerDirectory gives an issuer's metadata (OpenID Connect Discovery 1.0), cached. Endpoints
/// are always taken from here, never derived from the issuer URL.
public protocol IssuerDirectory: Sendable {
    func metadata(issuer: String, now: Date) throws(TokenEndpointError) -> IssuerMetadata
    /// Forgets the cached document after a check against it failed, so that it is read again
    /// (rate-limited); true when it was forgotten.
    @discardableResult
    func reread(issuer: String, now: Date) -> Bool
}
