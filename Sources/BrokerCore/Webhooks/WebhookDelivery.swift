import Foundation

/// WebhookDelivery is one claimed attempt to deliver an event to an endpoint: what to send,
/// where, and the secrets in force (opened, in memory only).
public struct WebhookDelivery: Sendable, Equatable {
    public let tenant: String
    public let endpoint: String
    public let eventID: String
    public let type: WebhookEventType
    public let url: String
    public let payload: String
    public let secrets: [String]
    /// Attempts made before this one; this claim is attempt `attempts + 1`, which fences the
    /// outcome: once another replica claimed it again (the lease ran out), this one's report
    /// changes nothing.
    public let attempts: Int
    public let createdAt: Date
    /// Until when no other replica claims it: not sent after `leaseUntil − timeout`.
    public let leaseUntil: Date

    public init(tenant: String, endpoint: String, eventID: String, type: WebhookEventType, url: String, payload: String,
                secrets: [String], attempts: Int, createdAt: Date, leaseUntil: Date) {
        (self.tenant, self.endpoint, self.eventID, self.type, self.url, self.payload, self.secrets, self.attempts, self.createdAt) =
            (tenant, endpoint, eventID, type, url, payload, secrets, attempts, createdAt)
        self.leaseUntil = leaseUntil
    }
}

/// A delivery as the delivery log shows it.
public struct WebhookDeliveryRecord: Sendable, Equatable {
    public enum State: String, Sendable { case pending, delivered, failed }
    public let eventID: String
    public let type: WebhookEventType
    public let orderingKey: String
    public let state: State
    public let attempts: Int
    public let lastStatus: Int?
    public let lastError: String?
    public let createdAt: Date
    public let deliveredAt: Date?
    public let nextAttemptAt: Date?

    public init(eventID: String, type: WebhookEventType, orderingKey: String, state: State, attempts: Int, lastStatus: Int?,
                lastError: String?, createdAt: Date, deliveredAt: Date?, nextAttemptAt: Date?) {
        (self.eventID, self.type, self.orderingKey, self.state, self.attempts, self.lastStatus, self.lastError, self.createdAt,
         self.deliveredAt, self.nextAttemptAt) = (eventID, type, orderingKey, state, attempts, lastStatus, lastError, createdAt, deliveredAt,
                                                  nextAttemptAt)
    }
}
