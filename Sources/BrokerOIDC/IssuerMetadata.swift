import Foundation

/// IssuerMetadata is the part of an OpenID Provider's discovery document the broker uses
/// (OpenID Connect Discovery 1.0 §3, RFC 8414).
public struct IssuerMetadata: Sendable, Equatable {
    public let issuer: String
    public let tokenEndpoint: URL
    public let authorizationEndpoint: URL?
    public let jwksURI: URL?
    public let revocationEndpoint: URL?
    public let endSessionEndpoint: URL?
}
