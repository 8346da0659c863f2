import BrokerCore
import Foundation

/// PostgresRegistryStore keeps tenants, client registrations (secret sealed with the context
/// `clients/<tenant>/<id>/client_secret`) and API keys (SHA-256 of the secret only).
public final class PostgresRegistryStore: RegistryStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    public func tenant(_ id: String) throws -> Tenant? {
        try pool.run { c in
            let r = try c.execute("SELECT id, name, disabled, extract(epoch from created_at) FROM tenants WHERE id = \(id)")
            return r.count == 0 ? nil : Tenant(id: r.string(0, 0)!, name: r.string(0, 1)!, disabled: r.bool(0, 2)!, createdAt: r.date(0, 3)!)
        }
    }

    public func tenants() throws -> [Tenant] {
        try pool.run { c in
            let r = try c.execute("SELECT id, name, disabled, extract(epoch from created_at) FROM tenants ORDER BY id")
            return (0..<r.count).map { Tenant(id: r.string($0, 0)!, name: r.string($0, 1)!, disabled: r.bool($0, 2)!, createdAt: r.date($0, 3)!) }
        }
    }

    public func putTenant(id: String, name: String, now: Date) throws -> (Tenant, created: Bool) {
        try pool.run { c in
            let r = try c.execute("""
                INSERT INTO tenants (id, name, created_at) VALUES (\(id), \(name), \(now))
                ON CONFLICT (id) DO UPDATE SET name = excluded.name
                RETURNING extract(epoch from created_at), disabled, (xmax = 0)
                """)
            return (Tenant(id: id, name: name, disabled: r.bool(0, 1)!, createdAt: r.date(0, 0)!), r.bool(0, 2)!)
        }
    }

    public func client(tenant: String, id: String) throws -> ClientRegistration? {
        try pool.run { c in
            let r = try c.execute("""
                SELECT issuer, client_id, auth_method, redirect_uri, array_to_string(scopes, ' '),
                       array_to_string(redirect_after_allowed, ' '), refresh_policy::text, max_concurrent_refreshes, assertion_alg,
                       on_ambiguous_refresh
                FROM clients WHERE tenant_id = \(tenant) AND id = \(id)
                """)
            guard r.count == 1 else { return nil }
            let policy = (try? JSONDecoder().decode(RefreshPolicy.self, from: Data(r.string(0, 6)!.utf8))) ?? RefreshPolicy()
            return ClientRegistration(
                tenant: tenant, id: id, issuer: r.string(0, 0)!, clientID: r.string(0, 1)!,
                authMethod: ClientAuthMethod(rawValue: r.string(0, 2)!) ?? .none, redirectURI: r.string(0, 3)!,
                scopes: r.words(0, 4), redirectAfterAllowed: r.words(0, 5), refreshPolicy: policy,
                maxConcurrentRefreshes: r.int(0, 7)!, assertionAlgorithm: r.string(0, 8).flatMap(JWSAlgorithm.init(rawValue:)),
                onAmbiguousRefresh: r.string(0, 9).flatMap(AmbiguousRefreshPolicy.init(rawValue:)) ?? .failClosed)
        }
    }

    public func clientSecret(tenant: String, id: String) throws -> String? {
        try pool.run { c in
            let r = try c.execute("SELECT client_secret FROM clients WHERE tenant_id = \(tenant) AND id = \(id)")
            guard r.count == 1, let sealed = r.bytes(0, 0) else { return nil }
            return try sealer.open(sealed, context: "clients/\(tenant)/\(id)/client_secret")
        }
    }

    public func assertionKey(tenant: String, id: String) throws -> [UInt8]? {
        try pool.run { c in
            let r = try c.execute("SELECT assertion_key FROM clients WHERE tenant_id = \(tenant) AND id = \(id)")
            guard r.count == 1, let sealed = r.bytes(0, 0) else { return nil }
            let b64 = try sealer.open(sealed, context: "clients/\(tenant)/\(id)/assertion_key")
            return Data(base64Encoded: b64).map { [UInt8]($0) }
        }
    }

    public func putClient(_ cl: ClientRegistration, secret: String?, assertionKey: [UInt8]?, now: Date) throws -> (ClientRegistration, created: Bool) {
        let policy = String(decoding: try JSONEncoder().encode(cl.refreshPolicy), as: UTF8.self)
        let sealed = secret.map { sealer.seal($0, context: "clients/\(cl.tenant)/\(cl.id)/client_secret") }
        let sealedKey = assertionKey.map { sealer.seal(Data($0).base64EncodedString(), context: "clients/\(cl.tenant)/\(cl.id)/assertion_key") }
        return try pool.run { c in
            let r = try c.execute("""
                INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, client_secret, redirect_uri, scopes,
                    redirect_after_allowed, refresh_policy, max_concurrent_refreshes, assertion_alg, assertion_key, on_ambiguous_refresh,
                    created_at, updated_at)
                VALUES (\(cl.tenant), \(cl.id), \(cl.issuer), \(cl.clientID), \(cl.authMethod.rawValue), \(sealed),
                    \(cl.redirectURI), \(cl.scopes), \(cl.redirectAfterAllowed), \(policy)::jsonb, \(cl.maxConcurrentRefreshes),
                    \(cl.assertionAlgorithm?.rawValue), \(sealedKey), \(cl.onAmbiguousRefresh.rawValue), \(now), \(now))
                ON CONFLICT (tenant_id, id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
                    auth_method = excluded.auth_method, client_secret = coalesce(excluded.client_secret, clients.client_secret),
                    redirect_uri = excluded.redirect_uri, scopes = excluded.scopes,
                    redirect_after_allowed = excluded.redirect_after_allowed, refresh_policy = excluded.refresh_policy,
                    max_concurrent_refreshes = excluded.max_concurrent_refreshes, assertion_alg = excluded.assertion_alg,
                    assertion_key = coalesce(excluded.assertion_key, clients.assertion_key),
                    on_ambiguous_refresh = excluded.on_ambiguous_refresh, updated_at = excluded.updated_at
                RETURNING (xmax = 0)
                """)
            return (cl, r.bool(0, 0)!)
        }
    }

    public func apiKey(id: String) throws -> (Principal, secretHash: [UInt8])? {
        try pool.run { c in
            let r = try c.execute("""
                SELECT name, array_to_string(roles, ' '), array_to_string(tenants, ' '), secret_hash,
                       extract(epoch from revoked_at)
                FROM api_keys WHERE id = \(id)
                """)
            guard r.count == 1 else { return nil }
            let p = Principal(id: id, name: r.string(0, 0)!, roles: Set(r.words(0, 1).compactMap(Role.init(rawValue:))),
                              tenants: Set(r.words(0, 2)), revokedAt: r.date(0, 4))
            return (p, r.bytes(0, 3) ?? [])
        }
    }

    public func createAPIKey(_ p: Principal, secretHash: [UInt8], now: Date) throws {
        try pool.run { c in
            try c.execute("""
                INSERT INTO api_keys (id, name, roles, tenants, secret_hash, created_at)
                VALUES (\(p.id), \(p.name), \(p.roles.map(\.rawValue).sorted()), \(p.tenants.sorted()), \(secretHash), \(now))
                """)
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
        try pool.run { c in try c.execute("UPDATE api_keys SET last_used_at = \(at) WHERE id = ANY(\(ids))") }
    }

}
