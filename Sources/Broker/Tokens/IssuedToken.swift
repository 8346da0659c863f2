import BrokerCore
import Foundation

/// IssuedToken is what a worker receives (spec §4.1).
public struct IssuedToken: Sendable, Equatable {
    public let accessToken: String
    public let tokenType: TokenType
    public let expiresAt: Date
    public let expiresIn: Int
    public let scope: [String]
    public let sessionID: String
    public let subject: String
    /// One DPoP proof per requested target (RFC 9449 §7), in the order asked; empty otherwise.
    public var dpopProofs: [String] = []
    /// For an exchanged token, its RFC 8693 `issued_token_type`.
    public var issuedTokenType: String? = nil
}
