import BrokerCore

extension LogLine {
    /// The line for an error that is not a BrokerError, answered as `internal_error`: what was
    /// being done and the cause (`BrokerError.cause(of:)`), which the answer never shows.
    public static func unexpected(tenant: String, client: String, session: String?, doing what: String, cause: String) -> LogLine {
        LogLine(tenant: tenant, client: client, session: session, event: RefreshEvent(.error, "unexpected_error", "\(what) failed: \(cause)"))
    }
}
