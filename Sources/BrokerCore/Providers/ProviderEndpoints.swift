import Foundation

/// ProviderEndpoints are endpoints a descriptor gives explicitly; each one given wins over the
/// provider's metadata (discovery or RFC 8414).
public struct ProviderEndpoints: Sendable, Equatable {
    public var authorization: URL?
    public var token: URL?
    public var revocation: URL?
    public var introspection: URL?
    public var userinfo: URL?

    public init(authorization: URL? = nil, token: URL? = nil, revocation: URL? = nil, introspection: URL? = nil, userinfo: URL? = nil) {
        self.authorization = authorization
        self.token = token
        self.revocation = revocation
        self.introspection = introspection
        self.userinfo = userinfo
    }

    /// Whether no metadata is needed: the authorization and token endpoints are both given.
    public var isComplete: Bool { authorization != nil && token != nil }
}
