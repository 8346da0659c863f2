import BrokerCore

/// RefreshLogLine is one log line about a session's refresh: where (tenant, client, session)
/// and what (the machine's event). It never carries a token.
public struct RefreshLogLine: Sendable, Equatable {
    public let tenant: String
    public let client: String
    public let session: String
    public let event: RefreshEvent
}
