import Foundation

/// IssuerDirectory gives an issuer's metadata (OpenID Connect Discovery 1.0), cached. Endpoints
/// are always taken from here, never derived from the issuer URL.
public protocol IssuerDirectory: Sendable {
    func metadata(issuer: String, now: Date) throws(TokenEndpointError) -> IssuerMetadata
}
