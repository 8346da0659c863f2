import Foundation

/// Backlog is the shared work every replica takes from and no replica owns: revocations the
/// IdP has not confirmed yet (the outbox) and bulk sign-outs still running. Its age is what
/// an operator alerts on. With it, counted on the same beat: when each client's TLS client
/// certificate expires (RFC 8705), which an operator must replace before then.
public struct Backlog: Sendable, Equatable {
    public var outboxDepth: Int
    /// When the oldest unconfirmed revocation was queued; nil when none waits.
    public var outboxOldest: Date?
    public var signoutJobsRunning: Int
    public var signoutItemsPending: Int
    /// Every client with a TLS client certificate, and its `notAfter`.
    public var clientCertificates: [ClientCertificateExpiry] = []

    public init(outboxDepth: Int, outboxOldest: Date?, signoutJobsRunning: Int, signoutItemsPending: Int) {
        (self.outboxDepth, self.outboxOldest, self.signoutJobsRunning, self.signoutItemsPending) =
            (outboxDepth, outboxOldest, signoutJobsRunning, signoutItemsPending)
    }
}

/// ClientCertificateExpiry is when one client's TLS client certificate expires.
public struct ClientCertificateExpiry: Sendable, Equatable {
    public let tenant: String, client: String, notAfter: Date

    public init(tenant: String, client: String, notAfter: Date) { (self.tenant, self.client, self.notAfter) = (tenant, client, notAfter) }
}
