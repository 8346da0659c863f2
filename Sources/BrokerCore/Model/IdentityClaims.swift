import Foundation

/// IdentityClaims are the ID-token claims worth keeping with a session.
public struct IdentityClaims: Sendable, Equatable, Codable {
    public var sid: String?
    public var email: String?
    public var authTime: Date?

    public init(sid: String? = nil, email: String? = nil, authTime: Date? = nil) {
        self.sid = sid
        self.email = email
        self.authTime = authTime
    }
}
