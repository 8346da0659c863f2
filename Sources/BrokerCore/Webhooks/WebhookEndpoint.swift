import Foundation

/// A tenant's webhook endpoint as shown (its secrets never are, after creation and rotation).
public struct WebhookEndpoint: Sendable, Equatable {
    public let tenant: String
    public let id: String
    public let url: String
    public let events: [WebhookEventType]
    public let createdAt: Date
    /// While a rotation overlaps: until when the previous secret signs too.
    public let previousValidUntil: Date?

    public init(tenant: String, id: String, url: String, events: [WebhookEventType], createdAt: Date, previousValidUntil: Date?) {
        (self.tenant, self.id, self.url, self.events, self.createdAt, self.previousValidUntil) =
            (tenant, id, url, events, createdAt, previousValidUntil)
    }
}
