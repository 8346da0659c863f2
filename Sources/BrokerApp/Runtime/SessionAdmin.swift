import Broker
import BrokerCore
import Foundation

/// SessionAdmin imports grants obtained elsewhere (spec §4.3 sessions:import) and shows session
/// metadata — never token material.
public struct SessionAdmin: Sendable {
    let store: any SessionStore
    let registry: RegistryCache
    let feed: any ChangeFeed
    let audit: any AuditSink
    let clock: any Clock

    public struct Import: Sendable {
        public var client: String
        public var subject: String
        public var refreshToken: String
        public var accessToken: String?
        public var expiresAt: Date?
        public var scopes: [String]?
        public var grantedAt: Date?
    }

    /// Stores the imported grant as a new active session. The caller then fetches a token when
    /// no usable access token came with it.
    public func importSession(_ i: Import, tenant: String, actor: String) throws -> Session {
        func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }
        let now = clock.now()
        guard let client = try registry.client(tenant: tenant, id: i.client, now: now) else { throw BrokerError.notFound("client") }
        guard !i.subject.isEmpty, i.subject.utf8.count <= 255 else { throw bad("'subject' must be 1...255 bytes") }
        guard !i.refreshToken.isEmpty, i.refreshToken.utf8.count <= 8192 else { throw bad("'refresh_token' must be 1...8192 bytes") }
        if let a = i.accessToken, a.isEmpty || a.utf8.count > 16384 { throw bad("'access_token' must be 1...16384 bytes") }
        if i.accessToken != nil, i.expiresAt == nil { throw bad("'expires_at' is required with 'access_token'") }
        if let g = i.grantedAt, g > now.addingTimeInterval(60) { throw bad("'granted_at' is in the future") }
        var rng = SystemRandomNumberGenerator()
        let usable = i.accessToken != nil && (i.expiresAt ?? now) > now
        let session = Session(
            tenant: tenant, id: Identifiers.session(using: &rng), client: client.id, subject: i.subject, issuer: client.issuer,
            scopes: i.scopes ?? client.scopes, accessToken: usable ? i.accessToken : nil, accessExpiresAt: usable ? i.expiresAt : nil,
            refreshToken: i.refreshToken, state: .active,
            nextRefreshAt: usable ? client.refreshPolicy.nextRefresh(issuedAt: now, expiresAt: i.expiresAt!, jitter: Double.random(in: -1...1)) : now,
            grantedAt: i.grantedAt ?? now,
            createdAt: now, grantExpiresAt: client.refreshPolicy.grantExpiry(grantedAt: i.grantedAt ?? now, refreshedAt: nil))
        try store.insert(session)
        feed.publish(.subject(tenant: tenant, client: client.id, subject: i.subject))
        feed.publish(.scheduled(tenant: tenant, id: session.id, client: client.id, at: session.nextRefreshAt))
        audit.record(AuditEvent(at: now, actor: actor, action: "session.import", tenant: tenant, session: session.id, outcome: "ok"))
        return session
    }

    public func session(tenant: String, id: String) throws -> Session {
        guard let s = try store.session(tenant: tenant, id: id) else { throw BrokerError.notFound("session") }
        return s
    }
}
