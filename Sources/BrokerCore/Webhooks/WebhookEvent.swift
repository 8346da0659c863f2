import Foundation

/// WebhookEvent is one event as it is stored and sent: its type, the key its deliveries are
/// ordered by (a session or a job), and its data. `payload` is the exact body that is signed,
/// `{"type", "timestamp", "data"}` as Standard Webhooks suggests.
public struct WebhookEvent: Sendable, Equatable {
    public let type: WebhookEventType
    public let orderingKey: String
    public let data: [String: String]

    public init(type: WebhookEventType, orderingKey: String, data: [String: String]) {
        (self.type, self.orderingKey, self.data) = (type, orderingKey, data)
    }

    /// A session's event: its tenant, id, client and subject, and the reason it ended, if any.
    public static func session(_ type: WebhookEventType, _ s: Session, extra: [String: String] = [:]) -> WebhookEvent {
        var data = ["tenant": s.tenant, "session_id": s.id, "client": s.client, "subject": s.subject, "state": s.state.rawValue]
        if let r = s.reason { data["reason"] = r }
        return WebhookEvent(type: type, orderingKey: s.id, data: data.merging(extra) { $1 })
    }

    /// The JSON body: keys sorted, so that a stored payload is the same text wherever it is made.
    public func payload(at: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let body: [String: Any] = ["type": type.rawValue, "timestamp": f.string(from: at), "data": data]
        // [String: Any] of strings only: cannot fail.
        let json = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: json, as: UTF8.self)
    }
}
