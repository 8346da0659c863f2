import BrokerCore
import Foundation

/// BackchannelLogoutService receives OpenID Connect Back-Channel Logout (1.0 §2.5–2.8): a
/// logout token verified against the client's issuer (signature via its JWKS, `iss`, `aud`,
/// `iat`, `events`, `sid` or `sub`, no `nonce`) and used once (its `jti`, across replicas)
/// revokes the matching sessions of that client — here and at the IdP, like an admin's DELETE.
/// A refused token changes nothing.
public struct BackchannelLogoutService: Sendable {
    let verifier: JWTVerifier
    let replays: any ReplayGuard
    let catalog: any SessionCatalog
    let revocations: RevocationService
    let registry: RegistryCache
    let audit: any AuditSink
    let clock: any Clock

    public init(verifier: JWTVerifier, replays: any ReplayGuard, catalog: any SessionCatalog, revocations: RevocationService,
                registry: RegistryCache, audit: any AuditSink, clock: any Clock) {
        self.verifier = verifier
        self.replays = replays
        self.catalog = catalog
        self.revocations = revocations
        self.registry = registry
        self.audit = audit
        self.clock = clock
    }

    /// Returns how many sessions were revoked.
    public func logout(tenant: String, client clientID: String, logoutToken: String) throws -> Int {
        let now = clock.now()
        func refuse(_ why: String) -> BrokerError {
            audit.record(AuditEvent(at: now, actor: "idp", action: .sessionBackchannelLogout, tenant: tenant, session: nil, outcome: "refused"))
            return .badRequest(code: "invalid_request", message: "logout_token rejected: \(why)")
        }
        _ = try registry.activeTenant(tenant, now: now)
        guard let client = try registry.client(tenant: tenant, id: clientID, now: now) else { throw BrokerError.notFound("client") }
        let claims: LogoutClaims
        do { claims = try verifier.verifyLogoutToken(logoutToken, issuer: client.issuer, clientID: client.clientID, now: now) } catch {
            switch error {
            case .rejected(let why): throw refuse(why.reason)
            case .keysUnavailable: throw BrokerError.idpUnavailable(retryAfter: nil)
            }
        }
        guard try replays.firstUse(issuer: client.issuer, jti: claims.jti, until: now.addingTimeInterval(3600)) else {
            throw refuse("jti already used")
        }
        var revoked = 0
        var query = SessionQuery(subject: claims.subject, client: client.id, sid: claims.sid, limit: 1000)
        repeat {
            let (page, next) = try catalog.sessions(tenant: tenant, matching: query)
            for s in page where s.state != .revoked {
                // One session failing does not stop the others; the count says how many were revoked.
                if (try? revocations.revoke(tenant: tenant, id: s.id, actor: "idp:backchannel"))?.revokedNow == true { revoked += 1 }
            }
            query.after = next
        } while query.after != nil
        audit.record(AuditEvent(at: now, actor: "idp", action: .sessionBackchannelLogout, tenant: tenant, session: nil, outcome: "revoked=\(revoked)"))
        return revoked
    }
}
