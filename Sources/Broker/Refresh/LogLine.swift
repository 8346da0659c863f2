import BrokerCore

/// LogLine is one log line of a service about a session or a login: where (tenant, client, and
/// the session when there is one) and what (an event: level, code, generic message). It never
/// carries a token.
public struct LogLine: Sendable, Equatable {
    public let tenant: String
    public let client: String
    public let session: String?
    public let event: RefreshEvent

    public init(tenant: String, client: String, session: String?, event: RefreshEvent) {
        self.tenant = tenant
        self.client = client
        self.session = session
        self.event = event
    }
}
