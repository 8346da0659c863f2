/// TokenType is an access token's `token_type` (RFC 6749 §7.1): a bearer token (RFC 6750), or one
/// bound to a DPoP key (RFC 9449), which only its key's holder can present.
public enum TokenType: String, Sendable, Equatable {
    case bearer = "Bearer"
    case dpop = "DPoP"

    /// The type an IdP named, compared case-insensitively (RFC 6749 §5.1); nil when unknown.
    public init?(named name: String) {
        switch name.lowercased() {
        case "bearer": self = .bearer
        case "dpop": self = .dpop
        default: return nil
        }
    }
}
