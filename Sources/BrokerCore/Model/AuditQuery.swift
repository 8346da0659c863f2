import Foundation

/// AuditQuery filters a tenant's audit trail, newest first, keyset-paginated by
/// row id.
public struct AuditQuery: Sendable, Equatable {
    public var action: AuditAction?
    public var session: String?
    public var actor: String?
    /// Only events about this client (app tokens).
    public var client: String?
    public var since: Date?
    public var until: Date?
    public var limit: Int
    /// Rows with an id below this one (the previous page's cursor).
    public var before: Int64?

    public init(action: AuditAction? = nil, session: String? = nil, actor: String? = nil, since: Date? = nil, until: Date? = nil,
                limit: Int = 100, before: Int64? = nil, client: String? = nil) {
        self.action = action
        self.session = session
        self.actor = actor
        self.since = since
        self.until = until
        self.limit = limit
        self.before = before
        self.client = client
    }
}

/// AuditRecord is one stored audit row: `count` identical events between `at` and `lastAt`.
public struct AuditRecord: Sendable, Equatable {
    public let id: Int64
    public let event: AuditEvent
    public let lastAt: Date
    public let count: Int

    public init(id: Int64, event: AuditEvent, lastAt: Date, count: Int) {
        self.id = id
        self.event = event
        self.lastAt = lastAt
        self.count = count
    }
}
