import Foundation

/// RegistryStore keeps tenants, client registrations and API keys: the slow-changing
/// configuration every request consults (through caches).
public protocol RegistryStore: Sendable {
    func tenant(_ id: String) throws -> Tenant?
    /// Creates or renames the tenant; returns it and whether it was created.
    func putTenant(id: String, name: String, now: Date) throws -> (Tenant, created: Bool)
    func tenants() throws -> [Tenant]

    func client(tenant: String, id: String) throws -> ClientRegistration?
    /// The stored client secret, unsealed; nil when the client has none.
    func clientSecret(tenant: String, id: String) throws -> String?
    /// The client's private_key_jwt signing key (DER), unsealed; nil when it has none.
    func assertionKey(tenant: String, id: String) throws -> [UInt8]?
    /// The client's TLS client certificate chain and key (RFC 8705), unsealed; nil when it has none.
    func clientCertificate(tenant: String, id: String) throws -> ClientTLSCredential?
    /// Creates or replaces the registration. A nil `secret`, `assertionKey` or `certificate`
    /// keeps the stored one — except that a registration without `tlsClientCertificate` keeps
    /// no certificate: the stored one is dropped with it.
    func putClient(_ client: ClientRegistration, secret: String?, assertionKey: [UInt8]?, certificate: ClientTLSCredential?,
                   now: Date) throws -> (ClientRegistration, created: Bool)

    /// The key with this id, the SHA-256 of its secret, and its previous secret after a rotation.
    func apiKey(id: String) throws -> (Principal, secretHash: [UInt8], previous: PreviousSecret?)?
    /// The principal a client certificate stands for (by its SHA-256), revoked or not.
    func apiKey(certificateSHA256: String) throws -> Principal?
    func createAPIKey(_ principal: Principal, secretHash: [UInt8], now: Date) throws
    /// Marks the key revoked; false when there is no such key.
    func revokeAPIKey(id: String, now: Date) throws -> Bool
    /// Gives the key a new secret; the current one becomes its previous secret, accepted until
    /// `previousUntil` (replacing any earlier previous one). With `unlessOverlappingAt`, a key
    /// whose previous secret is still accepted then is left as it is (a retried or concurrent
    /// rotation must not cut the overlap an earlier one promised). False when nothing changed.
    func rotateAPIKey(id: String, secretHash: [UInt8], previousUntil: Date, unlessOverlappingAt now: Date?) throws -> Bool
    func touchAPIKeys(_ ids: [String], at: Date) throws
    /// Every API key, newest first (revoked and expired ones too).
    func apiKeys() throws -> [APIKeyRecord]
}

extension RegistryStore {
    /// Creates or replaces a registration that brings no new TLS client certificate.
    public func putClient(_ client: ClientRegistration, secret: String?, assertionKey: [UInt8]?, now: Date) throws -> (ClientRegistration, created: Bool) {
        try putClient(client, secret: secret, assertionKey: assertionKey, certificate: nil, now: now)
    }
}
