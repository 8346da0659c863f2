import BrokerCore
import Foundation

/// IssuedToken is what a worker receives.
public struct IssuedToken: Sendable, Equatable {
    public let accessToken: String
    public let tokenType: TokenType
    public let expiresAt: Date
    public var expiresIn: Int
    public let scope: [String]
    public let sessionID: String
    public let subject: String
    /// The session's client (its registration's id in the tenant).
    public var client: String = ""
    /// The application's own id of the session's user, nil when it gave none.
    public var endUser: String? = nil
    /// One DPoP proof per requested target (RFC 9449 §7), in the order asked; empty otherwise.
    public var dpopProofs: [String] = []
    /// For an exchanged token, its RFC 8693 `issued_token_type`.
    public var issuedTokenType: String? = nil
    /// The session's kept members of its provider's answer (`Session.metadata`), a JSON object.
    public var metadata: String? = nil
    /// Where the rendered document of a plain token handed out from the cache is kept (nil
    /// otherwise). Not part of the token: equality ignores it.
    public var memo: TokenDocumentMemo? = nil
    /// The life it was handed out with (the request's min_ttl): it is never written with less.
    public var promised: TimeInterval = 0

    public static func == (a: IssuedToken, b: IssuedToken) -> Bool {
        a.accessToken == b.accessToken && a.tokenType == b.tokenType && a.expiresAt == b.expiresAt && a.expiresIn == b.expiresIn
            && a.scope == b.scope && a.sessionID == b.sessionID && a.subject == b.subject && a.endUser == b.endUser && a.dpopProofs == b.dpopProofs
            && a.issuedTokenType == b.issuedTokenType && a.metadata == b.metadata
    }

    /// A token that never expires (`Session.neverExpires`): handed out with `expires_at: null`.
    public var neverExpires: Bool { expiresAt == Session.neverExpires }

    /// The token as written at `now`: `expires_in` counted again, or nil when less life is left
    /// than was promised (an answer that waited — a batch's slowest item — must not carry it).
    public func rechecked(at now: Date) -> IssuedToken? {
        let left = expiresAt.timeIntervalSince(now)
        guard left >= max(promised, 1) else { return nil }
        var t = self
        t.expiresIn = Int(left.rounded(.down))
        return t
    }
}
