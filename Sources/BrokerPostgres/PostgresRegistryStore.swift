import BrokerCore
import Foundation

/// PostgresRegistryStore keeps tenants, client registrations (secret sealed with the context
/// `clients/<tenant>/<id>/client_secret`, the assertion key and TLS client certificate with
/// their column names) and API keys (SHA-256 of the secret only).
public final class PostgresRegistryStore: RegistryStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    static let tenantColumns = "id, name, disabled, extract(epoch from created_at) AS created_at"

    /// Reads the columns of `tenantColumns`, by name.
    static func tenant(_ r: PGRow) throws -> Tenant {
        try Tenant(id: r["id"], name: r["name"], disabled: r["disabled"], createdAt: r["created_at"])
    }

    public func tenant(_ id: String) throws -> Tenant? {
        try pool.run { c in
            try c.execute("SELECT \(raw: Self.tenantColumns) FROM tenants WHERE id = \(id)", plan: .generic).first(Self.tenant)
        }
    }

    public func tenants() throws -> [Tenant] {
        try pool.run { c in
            try c.execute("SELECT \(raw: Self.tenantColumns) FROM tenants ORDER BY id").map(Self.tenant)
        }
    }

    public func putTenant(id: String, name: String, now: Date) throws -> (Tenant, created: Bool) {
        try pool.run { c in
            let r = try c.execute("""
                INSERT INTO tenants (id, name, created_at) VALUES (\(id), \(name), \(now))
                ON CONFLICT (id) DO UPDATE SET name = excluded.name
                RETURNING \(raw: Self.tenantColumns), (xmax = 0) AS created
                """)
            guard let row = try r.first({ (try Self.tenant($0), try $0["created"] as Bool) }) else { throw BrokerError.storeUnavailable }
            return row
        }
    }

    public func client(tenant: String, id: String) throws -> ClientRegistration? {
        try pool.run { c in
            try c.execute("""
                SELECT issuer, client_id, auth_method, redirect_uri, array_to_string(scopes, ' ') AS scopes,
                       array_to_string(redirect_after_allowed, ' ') AS redirect_after_allowed, refresh_policy::text AS refresh_policy,
                       max_concurrent_refreshes, assertion_alg, on_ambiguous_refresh, dpop_alg, profile, trust_anchors,
                       provider, descriptor, disabled, upstream, tls_client_certificate_sha256,
                       tls_client_certificate_subject, extract(epoch from tls_client_certificate_not_after) AS tls_client_certificate_not_after,
                       hand_out_certificate_bound
                FROM clients WHERE tenant_id = \(tenant) AND id = \(id)
                """, plan: .generic).first { r in
                let t = "clients"
                var c = try ClientRegistration(
                    tenant: tenant, id: id, issuer: r["issuer"], clientID: r["client_id"], authMethod: r.known("auth_method", table: t),
                    redirectURI: r["redirect_uri"], scopes: r.words("scopes"), redirectAfterAllowed: r.words("redirect_after_allowed"),
                    refreshPolicy: Self.policy(r), maxConcurrentRefreshes: r["max_concurrent_refreshes"],
                    assertionAlgorithm: r.known("assertion_alg", table: t),
                    onAmbiguousRefresh: r.known("on_ambiguous_refresh", table: t),
                    dpopAlgorithm: r.known("dpop_alg", table: t), profile: r.known("profile", table: t),
                    trustAnchors: r["trust_anchors"], provider: r["provider"], descriptor: Self.descriptor(r), disabled: r["disabled"],
                    upstream: Self.upstream(r))
                c.tlsClientCertificate = try Self.certificate(r)
                c.handOutCertificateBound = try r["hand_out_certificate_bound"]
                return c
            }
        }
    }

    /// The view of the stored TLS client certificate (its clear columns), or nil.
    static func certificate(_ r: PGRow) throws -> ClientCertificate? {
        guard let sha: String = try r["tls_client_certificate_sha256"] else { return nil }
        let subject: String? = try r["tls_client_certificate_subject"], notAfter: Date? = try r["tls_client_certificate_not_after"]
        return ClientCertificate(thumbprint: sha, subject: subject ?? "", notAfter: notAfter ?? .distantPast)
    }

    /// The stored `refresh_policy`: JSON this release cannot read (a member of a newer release's
    /// policy, say) refuses the client rather than running it under the default policy.
    static func policy(_ r: PGRow) throws -> RefreshPolicy {
        let text: String = try r["refresh_policy"]
        do { return try JSONDecoder().decode(RefreshPolicy.self, from: Data(text.utf8)) } catch {
            throw BrokerError.storedValueUnknown(column: "clients.refresh_policy", value: String(text.prefix(200)))
        }
    }

    /// The stored descriptor: one this release cannot read (a member of a newer release's)
    /// refuses the client rather than running it as another provider.
    static func descriptor(_ r: PGRow) throws -> ProviderDescriptor {
        guard let text: String = try r["descriptor"] else { return .openID }
        do { return try ProviderDescriptor(jsonText: text) } catch {
            throw BrokerError.storedValueUnknown(column: "clients.descriptor", value: String(text.prefix(200)))
        }
    }

    /// The stored upstream: one this release cannot read refuses the client rather than
    /// sending its calls somewhere else.
    static func upstream(_ r: PGRow) throws -> UpstreamSettings? {
        guard let text: String = try r["upstream"] else { return nil }
        do { return try UpstreamSettings(jsonText: text) } catch {
            throw BrokerError.storedValueUnknown(column: "clients.upstream", value: String(text.prefix(200)))
        }
    }

    public func clientSecret(tenant: String, id: String) throws -> String? {
        try pool.run { c in
            let r = try c.execute("SELECT client_secret FROM clients WHERE tenant_id = \(tenant) AND id = \(id)", plan: .generic)
            guard let found = try r.first({ try $0.bytes("client_secret") }), let sealed = found else { return nil }
            return try sealer.open(sealed, context: "clients/\(tenant)/\(id)/client_secret")
        }
    }

    public func assertionKey(tenant: String, id: String) throws -> [UInt8]? {
        try pool.run { c in
            let r = try c.execute("SELECT assertion_key FROM clients WHERE tenant_id = \(tenant) AND id = \(id)", plan: .generic)
            guard let found = try r.first({ try $0.bytes("assertion_key") }), let sealed = found else { return nil }
            let b64 = try sealer.open(sealed, context: "clients/\(tenant)/\(id)/assertion_key")
            return Data(base64Encoded: b64).map { [UInt8]($0) }
        }
    }

    /// The chain and key are sealed as one text, the chain's PEM blocks then the key's; read
    /// apart by their labels.
    public func clientCertificate(tenant: String, id: String) throws -> ClientTLSCredential? {
        try pool.run { c in
            let r = try c.execute("""
                SELECT tls_client_credential, tls_client_certificate_sha256 FROM clients WHERE tenant_id = \(tenant) AND id = \(id)
                """, plan: .generic)
            guard let found = try r.first({ (try $0.bytes("tls_client_credential"), try $0["tls_client_certificate_sha256"] as String?) }),
                  let sealed = found.0, let sha = found.1 else { return nil }
            let pem = try sealer.open(sealed, context: "clients/\(tenant)/\(id)/tls_client_credential")
            let blocks = TrustAnchorRules.blocks(pem) ?? []
            let chain = blocks.filter { $0.label == "CERTIFICATE" }.map(\.text).joined()
            let key = blocks.filter { $0.label != "CERTIFICATE" }.map(\.text).joined()
            guard !chain.isEmpty, !key.isEmpty else { throw BrokerError.storedValueUnknown(column: "clients.tls_client_credential", value: "") }
            return ClientTLSCredential(certificatePEM: chain, keyPEM: key, thumbprint: sha)
        }
    }

    public func putClient(_ cl: ClientRegistration, secret: String?, assertionKey: [UInt8]?, certificate: ClientTLSCredential?,
                          now: Date) throws -> (ClientRegistration, created: Bool) {
        let policy = String(decoding: try JSONEncoder().encode(cl.refreshPolicy), as: UTF8.self)
        let sealedCredential = try certificate.map {
            try sealer.seal($0.certificatePEM + $0.keyPEM, context: "clients/\(cl.tenant)/\(cl.id)/tls_client_credential")
        }
        let info = cl.tlsClientCertificate
        let sealed = try secret.map { try sealer.seal($0, context: "clients/\(cl.tenant)/\(cl.id)/client_secret") }
        let sealedKey = try assertionKey.map { try sealer.seal(Data($0).base64EncodedString(), context: "clients/\(cl.tenant)/\(cl.id)/assertion_key") }
        return try pool.run { c in
            let r = try c.execute("""
                INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, client_secret, redirect_uri, scopes,
                    redirect_after_allowed, refresh_policy, max_concurrent_refreshes, assertion_alg, assertion_key, on_ambiguous_refresh,
                    dpop_alg, profile, trust_anchors, provider, descriptor, disabled, upstream, tls_client_credential,
                    tls_client_certificate_sha256, tls_client_certificate_subject, tls_client_certificate_not_after, hand_out_certificate_bound,
                    created_at, updated_at)
                VALUES (\(cl.tenant), \(cl.id), \(cl.issuer), \(cl.clientID), \(cl.authMethod.rawValue), \(sealed),
                    \(cl.redirectURI), \(cl.scopes), \(cl.redirectAfterAllowed), \(policy)::jsonb, \(cl.maxConcurrentRefreshes),
                    \(cl.assertionAlgorithm?.rawValue), \(sealedKey), \(cl.onAmbiguousRefresh.rawValue),
                    \(cl.dpopAlgorithm?.rawValue), \(cl.profile.rawValue), \(cl.trustAnchors), \(cl.provider),
                    \(cl.descriptor == .openID ? nil : cl.descriptor.json), \(cl.disabled), \(cl.upstream?.json), \(sealedCredential),
                    \(info?.thumbprint), \(info?.subject), \(info?.notAfter), \(cl.handOutCertificateBound), \(now), \(now))
                ON CONFLICT (tenant_id, id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
                    auth_method = excluded.auth_method, client_secret = coalesce(excluded.client_secret, clients.client_secret),
                    redirect_uri = excluded.redirect_uri, scopes = excluded.scopes,
                    redirect_after_allowed = excluded.redirect_after_allowed, refresh_policy = excluded.refresh_policy,
                    max_concurrent_refreshes = excluded.max_concurrent_refreshes, assertion_alg = excluded.assertion_alg,
                    assertion_key = coalesce(excluded.assertion_key, clients.assertion_key),
                    on_ambiguous_refresh = excluded.on_ambiguous_refresh, dpop_alg = excluded.dpop_alg,
                    profile = excluded.profile, trust_anchors = excluded.trust_anchors, provider = excluded.provider,
                    descriptor = excluded.descriptor, disabled = excluded.disabled, upstream = excluded.upstream,
                    tls_client_credential = CASE WHEN excluded.tls_client_certificate_sha256 IS NULL THEN NULL
                        ELSE coalesce(excluded.tls_client_credential, clients.tls_client_credential) END,
                    tls_client_certificate_sha256 = excluded.tls_client_certificate_sha256,
                    tls_client_certificate_subject = excluded.tls_client_certificate_subject,
                    tls_client_certificate_not_after = excluded.tls_client_certificate_not_after,
                    hand_out_certificate_bound = excluded.hand_out_certificate_bound,
                    -- A new certificate is a new lifetime to warn about.
                    tls_client_certificate_notified_days = CASE
                        WHEN excluded.tls_client_certificate_sha256 IS DISTINCT FROM clients.tls_client_certificate_sha256 THEN NULL
                        ELSE clients.tls_client_certificate_notified_days END,
                    updated_at = excluded.updated_at
                RETURNING (xmax = 0) AS created
                """)
            return (cl, try r.first { try $0["created"] } ?? false)
        }
    }

    public func apiKey(id: String) throws -> (Principal, secretHash: [UInt8], previous: PreviousSecret?)? {
        try pool.run { c in
            try c.execute("""
                SELECT \(raw: Self.keyColumns), secret_hash, previous_secret_hash, extract(epoch from previous_until) AS previous_until
                FROM api_keys WHERE id = \(id)
                """, plan: .generic).first { r in
                let p = try Self.principal(r), hash = try r.bytes("secret_hash") ?? [], previous = try r.bytes("previous_secret_hash")
                let until: Date? = try r["previous_until"]
                return (p, secretHash: hash, previous: previous.flatMap { h in until.map { PreviousSecret(hash: h, until: $0) } })
            }
        }
    }

    public func rotateAPIKey(id: String, secretHash: [UInt8], previousUntil: Date, unlessOverlappingAt now: Date?) throws -> Bool {
        try pool.run { c in
            try c.execute("""
                UPDATE api_keys SET previous_secret_hash = secret_hash, previous_until = \(previousUntil), secret_hash = \(secretHash)
                WHERE id = \(id) AND (\(now)::timestamptz IS NULL OR previous_until IS NULL OR previous_until <= \(now))
                """).affected == 1
        }
    }

    public func apiKey(certificateSHA256: String) throws -> Principal? {
        try pool.run { c in
            try c.execute("SELECT \(raw: Self.keyColumns) FROM api_keys WHERE certificate_sha256 = \(certificateSHA256)",
                          plan: .generic).first { try Self.principal($0) }
        }
    }

    static let keyColumns = """
        id, name, array_to_string(roles, ' ') AS roles, array_to_string(tenants, ' ') AS tenants,
        extract(epoch from revoked_at) AS revoked_at, extract(epoch from expires_at) AS expires_at, certificate_sha256
        """

    /// Reads the columns of `keyColumns`, by name. A role this release does not know refuses the
    /// key rather than dropping the role.
    static func principal(_ r: PGRow) throws -> Principal {
        try Principal(id: r["id"], name: r["name"], roles: Set(r.knownWords("roles", table: "api_keys")),
                      tenants: Set(r.words("tenants")), revokedAt: r["revoked_at"], expiresAt: r["expires_at"],
                      certificateSHA256: r["certificate_sha256"])
    }

    public func createAPIKey(_ p: Principal, secretHash: [UInt8], now: Date) throws {
        do {
            try pool.run { c in
                try c.execute("""
                    INSERT INTO api_keys (id, name, roles, tenants, secret_hash, created_at, expires_at, certificate_sha256)
                    VALUES (\(p.id), \(p.name), \(p.roles.map(\.rawValue).sorted()), \(p.tenants.sorted()), \(secretHash), \(now), \(p.expiresAt),
                            \(p.certificateSHA256))
                    """)
            }
        } catch BrokerError.conflict {
            throw BrokerError.conflict(code: "conflict", message: "that certificate already stands for another key")
        }
    }

    public func revokeAPIKey(id: String, now: Date) throws -> Bool {
        try pool.run { c in
            let r = try c.execute("UPDATE api_keys SET revoked_at = coalesce(revoked_at, \(now)) WHERE id = \(id)")
            return r.affected == 1
        }
    }

    public func touchAPIKeys(_ ids: [String], at: Date) throws {
        guard !ids.isEmpty else { return }
        try pool.run { c in
            // In id order, so that replicas marking the same keys never deadlock.
            try c.execute("""
                UPDATE api_keys k SET last_used_at = \(at)
                FROM (SELECT id FROM api_keys WHERE id = ANY(\(ids)) ORDER BY id FOR NO KEY UPDATE) l WHERE k.id = l.id
                """, plan: .generic)
        }
    }

    public func apiKeys() throws -> [APIKeyRecord] {
        try pool.run { c in
            try c.execute("""
                SELECT \(raw: Self.keyColumns), extract(epoch from created_at) AS created_at, extract(epoch from last_used_at) AS last_used_at
                FROM api_keys ORDER BY api_keys.created_at DESC, id
                """).map { r in try APIKeyRecord(principal: Self.principal(r), createdAt: r["created_at"], lastUsedAt: r["last_used_at"]) }
        }
    }
}
