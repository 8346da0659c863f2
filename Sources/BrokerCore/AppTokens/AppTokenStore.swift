import Foundation

/// AppTokenStore keeps app tokens (client credentials), one row per tenant, client and ask,
/// their access tokens and DPoP keys sealed at rest (the additional data binds tenant and row).
/// Every call carries the tenant, except the renewal loader, which walks every tenant. Rows
/// unused since they expired are deleted by retention (RetentionKind.expiredAppTokens).
///
/// Implementations are thread-safe; failures are thrown as BrokerError.
public protocol AppTokenStore: Sendable {
    func appToken(tenant: String, client: String, ask: AppTokenAsk) throws -> AppToken?

    /// Runs `body` holding the row's cross-replica grant lock (an advisory lock on a key of the
    /// tenant, client and ask), waiting at most `timeout` (0: only try, `refreshBusy` when
    /// held), with the row re-read under it (nil: none yet). `body` returns the row to write (nil:
    /// leave it) and its result; the write, its version bump and the release commit together.
    /// One holder at a time across every replica, each seeing the previous holder's write.
    func withGrantLock<T>(tenant: String, client: String, ask: AppTokenAsk, timeout: TimeInterval,
                          _ body: (AppToken?) throws -> (write: AppToken?, result: T)) throws -> T

    /// Drops every stored access token of the client (the IdP refused it, or it was disabled):
    /// none of them is handed out again. Returns how many were dropped.
    @discardableResult
    func drop(tenant: String, client: String) throws -> Int

    /// Records hand-outs (last_used_at), in bulk.
    func touch(_ uses: [AppTokenUse]) throws

    /// Tokens past their renewal instant before `before`, still alive then and used since their
    /// grant (AppTokenDecision.renewalDue), earliest first, across every tenant.
    func dueForRenewal(before: Date, limit: Int) throws -> [AppTokenUse]
}

/// AppTokenUse names one app token (its tenant, client and ask) at an instant: a hand-out, or
/// when it is due for renewal.
public struct AppTokenUse: Sendable, Equatable, Hashable {
    public let tenant: String
    public let client: String
    public let ask: AppTokenAsk
    public let at: Date

    public init(tenant: String, client: String, ask: AppTokenAsk, at: Date) {
        self.tenant = tenant
        self.client = client
        self.ask = ask
        self.at = at
    }
}
