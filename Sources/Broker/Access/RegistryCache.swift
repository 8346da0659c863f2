import Foundation
import BrokerCore

/// RegistryCache fronts the RegistryStore for the hot path: tenants and client registrations are
/// read on every request and change rarely. Entries live `maxAge` at most and are dropped at
/// once when the change feed says so.
///
/// Thread-safety: every method may be called from any thread; loads happen outside the lock.
public final class RegistryCache: Sendable {
    /// An entry with its load time; a class, so that a lookup under the lock costs one
    /// reference count rather than a copy of every field of a registration.
    private final class Timed<V: Sendable>: Sendable {
        let value: V
        let at: Date

        init(value: V, at: Date) {
            self.value = value
            self.at = at
        }
    }

    private struct ClientKey: Hashable, Sendable {
        let tenant: String, id: String

        /// The client id alone: a tenant's clients differ by id, and == still compares both.
        func hash(into hasher: inout Hasher) { hasher.combine(id) }
    }

    public let store: any RegistryStore
    private let configuredMaxAge: TimeInterval
    private let trust: CacheTrust
    /// The configured maximum age while the change feed is trusted, else 0 (CacheTrust).
    private var maxAge: TimeInterval { trust.maxAge(configuredMaxAge) }
    // Read on every request, changed rarely: readers share the lock (ReadMostly).
    private let tenants = ReadMostly<[String: Timed<Tenant?>]>([:])
    private let clients = ReadMostly<[ClientKey: Timed<ClientRegistration?>]>([:])
    private let secrets = ReadMostly<[ClientKey: Timed<String?>]>([:])
    private let assertionKeys = ReadMostly<[ClientKey: Timed<[UInt8]?>]>([:])
    private let certificates = ReadMostly<[ClientKey: Timed<ClientTLSCredential?>]>([:])

    public init(store: any RegistryStore, maxAge: TimeInterval, trust: CacheTrust = CacheTrust()) {
        self.store = store
        configuredMaxAge = maxAge
        self.trust = trust
    }

    /// The tenant if it exists (disabled or not).
    public func tenant(_ id: String, now: Date) throws -> Tenant? {
        try cached(tenants, id, now: now) { try store.tenant(id) }
    }

    /// The cached tenant without loading: `.some(nil)` is a cached absence, nil a miss.
    public func peekTenant(_ id: String, now: Date) -> Tenant?? {
        guard let hit = tenants.read({ $0[id] }), now.timeIntervalSince(hit.at) < maxAge else { return nil }
        return .some(hit.value)
    }

    /// The cached client without loading: `.some(nil)` is a cached absence, nil a miss.
    public func peekClient(tenant: String, id: String, now: Date) -> ClientRegistration?? {
        guard let hit = clients.read({ $0[ClientKey(tenant: tenant, id: id)] }),
              now.timeIntervalSince(hit.at) < maxAge else { return nil }
        return .some(hit.value)
    }

    /// The cached client's refresh policy without copying the registration: nil on a miss or a
    /// cached absence.
    public func peekPolicy(tenant: String, client: String, now: Date) -> RefreshPolicy? {
        clients.read { c in
            guard let hit = c[ClientKey(tenant: tenant, id: client)], now.timeIntervalSince(hit.at) < maxAge else { return nil }
            return hit.value?.refreshPolicy
        }
    }

    /// The tenant if it exists and is enabled, else `notFound`.
    public func activeTenant(_ id: String, now: Date) throws -> Tenant {
        guard let t = try tenant(id, now: now), !t.disabled else { throw BrokerError.notFound("tenant") }
        return t
    }

    public func client(tenant: String, id: String, now: Date) throws -> ClientRegistration? {
        try cached(clients, ClientKey(tenant: tenant, id: id), now: now) { try store.client(tenant: tenant, id: id) }
    }

    /// The client's secret, unsealed, cached like the registration (dropped with it on change).
    public func clientSecret(tenant: String, id: String, now: Date) throws -> String? {
        try cached(secrets, ClientKey(tenant: tenant, id: id), now: now) { try store.clientSecret(tenant: tenant, id: id) }
    }

    /// The client's private_key_jwt key (DER), unsealed, cached like the secret.
    public func assertionKey(tenant: String, id: String, now: Date) throws -> [UInt8]? {
        try cached(assertionKeys, ClientKey(tenant: tenant, id: id), now: now) { try store.assertionKey(tenant: tenant, id: id) }
    }

    /// The client's TLS client certificate and key (RFC 8705), unsealed, cached like the secret:
    /// a refresh costs no unsealing and presents the same certificate, so its kept connection
    /// is reused.
    public func clientCertificate(tenant: String, id: String, now: Date) throws -> ClientTLSCredential? {
        try cached(certificates, ClientKey(tenant: tenant, id: id), now: now) { try store.clientCertificate(tenant: tenant, id: id) }
    }

    /// The entry of `map` younger than maxAge, else loaded (outside the lock) and kept.
    private func cached<K: Hashable & Sendable, V: Sendable>(_ map: ReadMostly<[K: Timed<V>]>, _ key: K, now: Date,
                                                   load: () throws -> V) rethrows -> V {
        if let hit = map.read({ $0[key] }), now.timeIntervalSince(hit.at) < maxAge { return hit.value }
        let value = try load()
        map.write { $0[key] = Timed(value: value, at: now) }
        return value
    }

    /// Applies a change published by any replica.
    public func forget(_ change: Change) {
        switch change {
        case .tenant(let id):
            _ = tenants.write { $0.removeValue(forKey: id) }
            clients.write { c in c = c.filter { $0.key.tenant != id } }
            secrets.write { c in c = c.filter { $0.key.tenant != id } }
            assertionKeys.write { c in c = c.filter { $0.key.tenant != id } }
            certificates.write { c in c = c.filter { $0.key.tenant != id } }
        case .client(let tenant, let id):
            _ = clients.write { $0.removeValue(forKey: ClientKey(tenant: tenant, id: id)) }
            _ = secrets.write { $0.removeValue(forKey: ClientKey(tenant: tenant, id: id)) }
            _ = assertionKeys.write { $0.removeValue(forKey: ClientKey(tenant: tenant, id: id)) }
            _ = certificates.write { $0.removeValue(forKey: ClientKey(tenant: tenant, id: id)) }
        case .resync:
            tenants.write { $0.removeAll() }
            clients.write { $0.removeAll() }
            secrets.write { $0.removeAll() }
            assertionKeys.write { $0.removeAll() }
            certificates.write { $0.removeAll() }
        default:
            break
        }
    }
}
