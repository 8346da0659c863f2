import BrokerCore
import Foundation

/// BackchannelLogoutService receives OpenID Connect Back-Channel Logout (1.0 §2.5–2.8): a
/// logout token verified against the client's issuer (signature via its JWKS, `iss`, `aud`,
/// `iat`, `events`, `sid` or `sub`, no `nonce`) and used once (its `jti`, across replicas)
/// revokes the matching sessions of that client — here and at the IdP, like an admin's DELETE.
/// A refused token changes nothing.
///
/// The `jti` is spent only once every matching session is revoked: when one cannot be (the
/// database unreachable, its lock held past the timeout), the IdP gets that error (a 503) and
/// the log a `backchannel_logout_incomplete` line, and the same token, sent again, is accepted
/// and revokes what is left. A logout is never acknowledged while a session it names is active.
public struct BackchannelLogoutService: Sendable {
    let verifier: JWTVerifier
    let replays: any ReplayGuard
    let catalog: any SessionCatalog
    let revocations: RevocationService
    let registry: RegistryCache
    let audit: any AuditSink
    let clock: any Clock
    let events: @Sendable (LogLine) -> Void
    /// Logout tokens received, by outcome: `revoked`, `refused`, `incomplete`.
    public let outcomes = LabeledCounter<String>()

    public init(verifier: JWTVerifier, replays: any ReplayGuard, catalog: any SessionCatalog, revocations: RevocationService,
                registry: RegistryCache, audit: any AuditSink, clock: any Clock, events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.verifier = verifier
        self.replays = replays
        self.catalog = catalog
        self.revocations = revocations
        self.registry = registry
        self.audit = audit
        self.clock = clock
        self.events = events
    }

    /// Returns how many sessions were revoked.
    public func logout(tenant: String, client clientID: String, logoutToken: String) throws -> Int {
        let now = clock.now()
        func refuse(_ why: String) -> BrokerError {
            outcomes.add("refused")
            audit.record(AuditEvent(at: now, actor: "idp", action: .sessionBackchannelLogout, tenant: tenant, session: nil, outcome: "refused"))
            return .badRequest(code: "invalid_request", message: "logout_token rejected: \(why)")
        }
        _ = try registry.activeTenant(tenant, now: now)
        guard let client = try registry.client(tenant: tenant, id: clientID, now: now) else { throw BrokerError.notFound("client") }
        let claims: LogoutClaims
        do { claims = try verifier.verifyLogoutToken(logoutToken, issuer: client.issuer, clientID: client.clientID,
                                                             trustAnchors: client.trustAnchors, now: now) } catch {
            switch error {
            case .rejected(let why): throw refuse(why.reason)
            case .keysUnavailable: throw BrokerError.idpUnavailable(retryAfter: nil)
            }
        }
        // Spent only once it has done its work: a token whose revocations failed may come again.
        guard try !replays.seen(issuer: client.issuer, jti: claims.jti) else { throw refuse("jti already used") }
        var revoked = 0
        var failures: [(session: String, error: BrokerError)] = []
        var query = SessionQuery(subject: claims.subject, client: client.id, sid: claims.sid, limit: 1000)
        repeat {
            let (page, next) = try catalog.sessions(tenant: tenant, matching: query)
            for s in page where s.state != .revoked {
                // One session failing does not stop the others; the logout is answered with its error.
                do {
                    if try revocations.revoke(tenant: tenant, id: s.id, actor: "idp:backchannel").revokedNow { revoked += 1 }
                } catch BrokerError.notFound {
                    continue   // deleted meanwhile: nothing left to revoke
                } catch {
                    failures.append((s.id, BrokerError.answering(error) { cause in
                        events(.unexpected(tenant: tenant, client: client.id, session: s.id, doing: "a back-channel logout's revocation", cause: cause))
                    }))
                }
            }
            query.after = next
        } while query.after != nil
        if let first = failures.first {
            outcomes.add("incomplete")
            events(LogLine(tenant: tenant, client: client.id, session: first.session, event: RefreshEvent(.error, "backchannel_logout_incomplete",
                "\(failures.count) session(s) of the logout could not be revoked (\(first.error.code)); \(revoked) were; the IdP is answered an error and may send the logout again")))
            audit.record(AuditEvent(at: now, actor: "idp", action: .sessionBackchannelLogout, tenant: tenant, session: nil,
                                    outcome: "incomplete=\(failures.count)"))
            throw first.error
        }
        _ = try replays.firstUse(issuer: client.issuer, jti: claims.jti, until: now.addingTimeInterval(3600))
        outcomes.add("revoked")
        audit.record(AuditEvent(at: now, actor: "idp", action: .sessionBackchannelLogout, tenant: tenant, session: nil, outcome: "revoked=\(revoked)"))
        return revoked
    }
}
