import Foundation

/// PendingRevocation is a token of a revoked session still to be revoked at its IdP (RFC 7009),
/// kept in a durable outbox until the IdP confirms.
public struct PendingRevocation: Sendable, Equatable {
    public let id: String
    public let tenant: String
    public let session: String
    public let client: String
    public let token: String
    /// `refresh_token` or `access_token` (RFC 7009 §2.1 token_type_hint).
    public let hint: String
    /// Delivery attempts so far, this one included once claimed.
    public let attempts: Int

    public init(id: String, tenant: String, session: String, client: String, token: String, hint: String, attempts: Int) {
        self.id = id
        self.tenant = tenant
        self.session = session
        self.client = client
        self.token = token
        self.hint = hint
        self.attempts = attempts
    }
}
