import Foundation

/// ExchangedToken is an RFC 8693 §2.2.1 answer: the token, its `issued_token_type`, and when it
/// expires (counted from when the request was sent).
public struct ExchangedToken: Sendable, Equatable {
    public let grant: TokenGrant
    public let issuedTokenType: String

    public init(grant: TokenGrant, issuedTokenType: String) {
        self.grant = grant
        self.issuedTokenType = issuedTokenType
    }
}
