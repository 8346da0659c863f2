/// TokenResponseShape is how a provider's token answer is read: its encoding, how a refusal looks
/// when it comes with HTTP 200 (GitHub's `error=…`, Slack's `{"ok": false}`), where each value is,
/// which `token_type` to assume for a non-standard one, and which members to keep with the session.
public struct TokenResponseShape: Sendable, Equatable {
    public enum Format: String, Sendable, CaseIterable { case json, form, auto }

    public var format: Format = .auto
    /// A 200 answer with an `error` member is a refusal.
    public var errorInOK = false
    /// A boolean whose `false` makes a 200 answer a refusal.
    public var okPointer: JSONPointer?
    /// Where a refusal's code is (`/error`; HubSpot's `/category`).
    public var errorPointer = JSONPointer("/error")!
    /// How the answer's scopes are separated (nil: as the authorization request's; GitHub asks
    /// with spaces and answers with commas). An array of scopes is read as it is.
    public var scopeSeparator: String?
    public var accessToken = JSONPointer("/access_token")!
    public var refreshToken = JSONPointer("/refresh_token")!
    public var expiresIn = JSONPointer("/expires_in")!
    public var scope = JSONPointer("/scope")!
    public var tokenType = JSONPointer("/token_type")!
    public var idToken = JSONPointer("/id_token")!
    /// The type of a token whose `token_type` is absent or neither Bearer nor DPoP; nil: such an
    /// answer is refused.
    public var defaultTokenType: TokenType?
    /// The refresh token's lifetime in seconds (`/refresh_token_expires_in`).
    public var grantExpiresIn: JSONPointer?
    /// Members kept with the session and handed out as `metadata`, by name.
    public var keep: [Kept] = []

    public init() {}

    /// One member kept: its name in `metadata` and where it is in the answer.
    public struct Kept: Sendable, Equatable {
        public let name: String
        public let pointer: JSONPointer

        public init(name: String, pointer: JSONPointer) {
            self.name = name
            self.pointer = pointer
        }
    }

    /// At most this many members are kept, each at most `maxKeptBytes` of JSON.
    public static let maxKept = 16
    public static let maxKeptBytes = 4096
}
