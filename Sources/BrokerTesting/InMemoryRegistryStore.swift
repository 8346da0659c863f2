import BrokerCore
import Foundation
import Synchronization

/// InMemoryRegistryStore is the RegistryStore for pure unit tests.
public final class InMemoryRegistryStore: RegistryStore {
    private struct State {
        var tenants: [String: Tenant] = [:]
        var clients: [String: (ClientRegistration, String?)] = [:]
        var keys: [String: (Principal, [UInt8])] = [:]
        var previous: [String: PreviousSecret] = [:]
        var keyTimes: [String: (created: Date, used: Date?)] = [:]
        var assertionKeys: [String: [UInt8]] = [:]
        var certificates: [String: ClientTLSCredential] = [:]
    }

    private let state = Mutex(State())
    /// Runs before each read of an API key by id: a test's stand-in for whatever happens while
    /// a real store is being asked (a change notice arriving, say).
    private let beforeKeyRead = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// Thrown by the next reads of a client, as many as counted: a test's stand-in for a
    /// database that did not answer for a moment.
    private let clientReadFailures = Mutex<(error: BrokerError, count: Int)?>(nil)
    public init() {}

    public func onKeyRead(_ hook: (@Sendable (String) -> Void)?) { beforeKeyRead.withLock { $0 = hook } }
    public func failClientReads(_ count: Int, with error: BrokerError) { clientReadFailures.withLock { $0 = (error, count) } }

    public func tenant(_ id: String) throws -> Tenant? { state.withLock { $0.tenants[id] } }
    public func tenants() throws -> [Tenant] { state.withLock { $0.tenants.values.sorted { $0.id < $1.id } } }

    public func putTenant(id: String, name: String, now: Date) throws -> (Tenant, created: Bool) {
        state.withLock { s in
            if var t = s.tenants[id] {
                t.name = name
                s.tenants[id] = t
                return (t, false)
            }
            let t = Tenant(id: id, name: name, createdAt: now)
            s.tenants[id] = t
            return (t, true)
        }
    }

    public func client(tenant: String, id: String) throws -> ClientRegistration? {
        let failure = clientReadFailures.withLock { f -> BrokerError? in
            guard let (error, count) = f, count > 0 else { return nil }
            f = (error, count - 1)
            return error
        }
        if let failure { throw failure }
        return state.withLock { $0.clients[tenant + "/" + id]?.0 }
    }
    public func clientSecret(tenant: String, id: String) throws -> String? { state.withLock { $0.clients[tenant + "/" + id]?.1 } }

    public func assertionKey(tenant: String, id: String) throws -> [UInt8]? { state.withLock { $0.assertionKeys[tenant + "/" + id] } }

    public func clientCertificate(tenant: String, id: String) throws -> ClientTLSCredential? {
        state.withLock { $0.certificates[tenant + "/" + id] }
    }

    public func putClient(_ c: ClientRegistration, secret: String?, assertionKey: [UInt8]?, certificate: ClientTLSCredential?,
                          now: Date) throws -> (ClientRegistration, created: Bool) {
        state.withLock { s in
            let k = c.tenant + "/" + c.id
            if let assertionKey { s.assertionKeys[k] = assertionKey }
            if c.tlsClientCertificate == nil { s.certificates[k] = nil } else if let certificate { s.certificates[k] = certificate }
            let old = s.clients[k]
            s.clients[k] = (c, secret ?? old?.1)
            return (c, old == nil)
        }
    }

    public func apiKey(id: String) throws -> (Principal, secretHash: [UInt8], previous: PreviousSecret?)? {
        beforeKeyRead.withLock { $0 }?(id)
        return state.withLock { s in s.keys[id].map { ($0.0, $0.1, s.previous[id]) } }
    }

    public func apiKey(certificateSHA256: String) throws -> Principal? {
        state.withLock { s in s.keys.values.first { $0.0.certificateSHA256 == certificateSHA256 }?.0 }
    }

    public func createAPIKey(_ p: Principal, secretHash: [UInt8], now: Date) throws {
        if let c = p.certificateSHA256, try apiKey(certificateSHA256: c) != nil {
            throw BrokerError.conflict(code: "conflict", message: "that certificate already stands for another key")
        }
        state.withLock { s in
            s.keys[p.id] = (p, secretHash)
            s.keyTimes[p.id] = (now, nil)
        }
    }

    public func rotateAPIKey(id: String, secretHash: [UInt8], previousUntil: Date, unlessOverlappingAt now: Date?) throws -> Bool {
        state.withLock { s in
            guard let (p, h) = s.keys[id] else { return false }
            if let now, let until = s.previous[id]?.until, until > now { return false }
            s.previous[id] = PreviousSecret(hash: h, until: previousUntil)
            s.keys[id] = (p, secretHash)
            return true
        }
    }

    public func revokeAPIKey(id: String, now: Date) throws -> Bool {
        state.withLock { s in
            guard let (p, h) = s.keys[id] else { return false }
            s.keys[id] = (Principal(id: p.id, name: p.name, roles: p.roles, tenants: p.tenants, revokedAt: p.revokedAt ?? now,
                                    expiresAt: p.expiresAt, certificateSHA256: p.certificateSHA256), h)
            return true
        }
    }

    public func touchAPIKeys(_ ids: [String], at: Date) throws {
        state.withLock { s in for id in ids where s.keyTimes[id] != nil { s.keyTimes[id]!.used = at } }
    }

    public func apiKeys() throws -> [APIKeyRecord] {
        state.withLock { s in
            s.keys.values.map { p, _ in APIKeyRecord(principal: p, createdAt: s.keyTimes[p.id]?.created ?? .distantPast, lastUsedAt: s.keyTimes[p.id]?.used) }
                .sorted { ($0.createdAt, $1.principal.id) > ($1.createdAt, $0.principal.id) }
        }
    }
}
