import Foundation

/// AuditEvent records who did what to which session (or, for an app token, which client), when,
/// with what outcome. It never carries a token.
public struct AuditEvent: Sendable, Equatable {
    public let at: Date
    /// The principal id, or "engine" / "idp" for the broker's own actions.
    public let actor: String
    public let action: AuditAction
    public let tenant: String?
    public let session: String?
    public let outcome: String
    /// The client an event of no session is about (app tokens); nil otherwise.
    public let client: String?

    public init(at: Date, actor: String, action: AuditAction, tenant: String?, session: String?, outcome: String, client: String? = nil) {
        self.at = at
        self.actor = actor
        self.action = action
        self.tenant = tenant
        self.session = session
        self.outcome = outcome
        self.client = client
    }
}
