import Foundation

/// VerifiedIDToken is an ID token whose signature and claims passed every check, reduced to the
/// claims the broker keeps.
public struct VerifiedIDToken: Sendable, Equatable {
    public let subject: String
    public let issuedAt: Date
    public let expiresAt: Date
    public let claims: IdentityClaims

    public init(subject: String, issuedAt: Date, expiresAt: Date, claims: IdentityClaims) {
        self.subject = subject
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.claims = claims
    }
}
