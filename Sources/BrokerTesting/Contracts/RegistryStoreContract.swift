import BrokerCore
import Foundation

/// RegistryStoreContract: tenants, clients and API keys. Clients belong to one tenant (the same
/// client id in another tenant is another registration); keys name the tenants they reach.
public enum RegistryStoreContract: String, CaseIterable, Sendable {
    case clientsStayInTheirTenant, trustAnchorsStayWithTheirClient, upstreamsStayWithTheirClient, apiKeysRevoke, certificatePrincipals
    case clientCertificatesStayWithTheirClient

    public func run(_ store: any RegistryStore) throws {
        switch self {
        case .clientsStayInTheirTenant: try Self.clientsStayInTheirTenant(store)
        case .trustAnchorsStayWithTheirClient: try Self.trustAnchorsStayWithTheirClient(store)
        case .upstreamsStayWithTheirClient: try Self.upstreamsStayWithTheirClient(store)
        case .apiKeysRevoke: try Self.apiKeysRevoke(store)
        case .certificatePrincipals: try Self.certificatePrincipals(store)
        case .clientCertificatesStayWithTheirClient: try Self.clientCertificatesStayWithTheirClient(store)
        }
    }

    static func registration(_ tenant: String, issuer: String) -> ClientRegistration {
        ClientRegistration(tenant: tenant, id: "app", issuer: issuer, clientID: "cid-" + tenant, authMethod: .clientSecretBasic,
                           redirectURI: "https://broker.example/v1/callback", scopes: ["openid"])
    }

    static func clientsStayInTheirTenant(_ store: any RegistryStore) throws {
        let a = Contract.unique("ra"), b = Contract.unique("rb")
        try Contract.expect(try store.putTenant(id: a, name: "A", now: Contract.t0).created, "a new tenant is not reported created")
        try Contract.expect(try !store.putTenant(id: a, name: "A renamed", now: Contract.t0).created, "a rename is reported as a creation")
        try Contract.expect(try store.tenant(a)?.name == "A renamed", "the rename was not stored")
        _ = try store.putTenant(id: b, name: "B", now: Contract.t0)
        _ = try store.putClient(registration(a, issuer: "https://a.example"), secret: "secret-a", assertionKey: [1, 2, 3], now: Contract.t0)
        try Contract.expect(try store.client(tenant: b, id: "app") == nil, "a client is visible from another tenant")
        try Contract.expect(try store.clientSecret(tenant: b, id: "app") == nil && store.assertionKey(tenant: b, id: "app") == nil,
                            "a client's secret or key is readable from another tenant")
        _ = try store.putClient(registration(b, issuer: "https://b.example"), secret: "secret-b", assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.client(tenant: a, id: "app")?.issuer == "https://a.example"
                            && store.client(tenant: b, id: "app")?.issuer == "https://b.example", "registrations of one id mixed across tenants")
        try Contract.expect(try store.clientSecret(tenant: a, id: "app") == "secret-a" && store.clientSecret(tenant: b, id: "app") == "secret-b",
                            "secrets mixed across tenants")
        // A replacement without a secret or key keeps the stored ones.
        var changed = registration(a, issuer: "https://a2.example")
        changed.refreshPolicy.idleAfter = 900
        try Contract.expect(try !store.putClient(changed, secret: nil, assertionKey: nil, now: Contract.t0).created, "a replacement is reported created")
        try Contract.expect(try store.clientSecret(tenant: a, id: "app") == "secret-a" && store.assertionKey(tenant: a, id: "app") == [1, 2, 3],
                            "a replacement without secret or key dropped the stored ones")
        let back = try store.client(tenant: a, id: "app")
        try Contract.expect(back?.issuer == "https://a2.example" && back?.refreshPolicy.idleAfter == 900, "the replacement did not read back whole")
    }

    /// A client's upstream (where the outbound proxy sends its calls) reads back whole, is its
    /// alone, and a replacement without one drops it.
    static func upstreamsStayWithTheirClient(_ store: any RegistryStore) throws {
        let a = Contract.unique("ua"), b = Contract.unique("ub")
        _ = try store.putTenant(id: a, name: "A", now: Contract.t0)
        _ = try store.putTenant(id: b, name: "B", now: Contract.t0)
        var ra = registration(a, issuer: "https://a.example")
        ra.upstream = UpstreamSettings(baseURL: "https://{instance_url}/services/data", allowPrivateAddresses: true, plain401InvalidToken: true,
                                       retryRateLimited: true, retryBudget: 7.5)
        _ = try store.putClient(ra, secret: nil, assertionKey: nil, now: Contract.t0)
        _ = try store.putClient(registration(b, issuer: "https://b.example"), secret: nil, assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.client(tenant: a, id: "app")?.upstream == ra.upstream, "a client's upstream did not read back whole")
        try Contract.expect(try store.client(tenant: b, id: "app")?.upstream == nil, "another tenant's client of the same id got its upstream")
        ra.upstream = nil
        _ = try store.putClient(ra, secret: nil, assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.client(tenant: a, id: "app")?.upstream == nil, "a replacement without an upstream kept the old one")
    }

    /// A client's TLS client certificate and key (RFC 8705) read back as stored, for that client
    /// only; a replacement without a new one keeps it, and one of another method drops it.
    static func clientCertificatesStayWithTheirClient(_ store: any RegistryStore) throws {
        let a = Contract.unique("ca"), b = Contract.unique("cb")
        _ = try store.putTenant(id: a, name: "A", now: Contract.t0)
        _ = try store.putTenant(id: b, name: "B", now: Contract.t0)
        let credential = ClientTLSCredential(certificatePEM: "-----BEGIN CERTIFICATE-----\nQUFB\n-----END CERTIFICATE-----\n",
                                             keyPEM: "-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n", thumbprint: "x5t-a")
        var ra = registration(a, issuer: "https://a.example")
        ra.authMethod = .tlsClientAuth
        ra.tlsClientCertificate = ClientCertificate(thumbprint: "x5t-a", subject: "CN=a", notAfter: Contract.t0.addingTimeInterval(86_400))
        _ = try store.putClient(ra, secret: nil, assertionKey: nil, certificate: credential, now: Contract.t0)
        _ = try store.putClient(registration(b, issuer: "https://a.example"), secret: "s", assertionKey: nil, now: Contract.t0)
        let back = try store.clientCertificate(tenant: a, id: "app")
        try Contract.expect(back?.certificatePEM == credential.certificatePEM && back?.keyPEM == credential.keyPEM && back?.thumbprint == "x5t-a",
                            "a client certificate did not read back as stored")
        try Contract.expect(try store.client(tenant: a, id: "app")?.tlsClientCertificate == ra.tlsClientCertificate,
                            "the certificate's view did not read back")
        try Contract.expect(try store.clientCertificate(tenant: b, id: "app") == nil, "another tenant's client of the same id got the certificate")
        _ = try store.putClient(ra, secret: nil, assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.clientCertificate(tenant: a, id: "app")?.keyPEM == credential.keyPEM, "a replacement without a certificate dropped it")
        var secretBased = ra
        secretBased.authMethod = .clientSecretBasic
        secretBased.tlsClientCertificate = nil
        _ = try store.putClient(secretBased, secret: "s", assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.clientCertificate(tenant: a, id: "app") == nil && store.client(tenant: a, id: "app")?.tlsClientCertificate == nil,
                            "a client of another method kept its certificate")
    }

    /// A client's own trust anchors are its alone: the same client id in another tenant keeps
    /// its own (or the deployment's), and a replacement without them goes back to the deployment's.
    static func trustAnchorsStayWithTheirClient(_ store: any RegistryStore) throws {
        let a = Contract.unique("ta"), b = Contract.unique("tb")
        _ = try store.putTenant(id: a, name: "A", now: Contract.t0)
        _ = try store.putTenant(id: b, name: "B", now: Contract.t0)
        let pemA = "-----BEGIN CERTIFICATE-----\nQUFB\n-----END CERTIFICATE-----\n"
        let pemB = "-----BEGIN CERTIFICATE-----\nQkJC\n-----END CERTIFICATE-----\n"
        var ra = registration(a, issuer: "https://a.example"), rb = registration(b, issuer: "https://a.example")
        ra.trustAnchors = pemA
        _ = try store.putClient(ra, secret: "s", assertionKey: nil, now: Contract.t0)
        _ = try store.putClient(rb, secret: "s", assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.client(tenant: a, id: "app")?.trustAnchors == pemA, "a client's trust anchors did not read back verbatim")
        try Contract.expect(try store.client(tenant: b, id: "app")?.trustAnchors == nil, "another tenant's client of the same id got its trust anchors")
        rb.trustAnchors = pemB
        _ = try store.putClient(rb, secret: nil, assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.client(tenant: a, id: "app")?.trustAnchors == pemA && store.client(tenant: b, id: "app")?.trustAnchors == pemB,
                            "trust anchors mixed across tenants")
        ra.trustAnchors = nil
        _ = try store.putClient(ra, secret: nil, assertionKey: nil, now: Contract.t0)
        try Contract.expect(try store.client(tenant: a, id: "app")?.trustAnchors == nil, "a replacement without trust anchors kept the old ones")
        try Contract.expect(try store.client(tenant: b, id: "app")?.trustAnchors == pemB, "replacing one tenant's client changed another's anchors")
    }

    static func apiKeysRevoke(_ store: any RegistryStore) throws {
        let id = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))
        let p = Principal(id: id, name: "k", roles: [.worker, .admin], tenants: ["ta", "tb"], expiresAt: Contract.t0.addingTimeInterval(3600))
        try store.createAPIKey(p, secretHash: [9, 9], now: Contract.t0)
        let back = try store.apiKey(id: id)
        try Contract.expect(back?.0.tenants == ["ta", "tb"] && back?.0.roles == [.worker, .admin] && back?.secretHash == [9, 9]
                            && back?.0.expiresAt == Contract.t0.addingTimeInterval(3600), "a key did not read back whole")
        try store.touchAPIKeys([id], at: Contract.t0.addingTimeInterval(5))
        let listed = try store.apiKeys().first { $0.principal.id == id }
        try Contract.expect(listed?.createdAt == Contract.t0 && listed?.lastUsedAt == Contract.t0.addingTimeInterval(5)
                            && listed?.principal.expiresAt == p.expiresAt, "the listing does not show the key's times")
        // Rotation: a new secret, the old one kept as the previous until its time.
        try Contract.expect(try store.rotateAPIKey(id: id, secretHash: [7, 7], previousUntil: Contract.t0.addingTimeInterval(60), unlessOverlappingAt: Contract.t0), "rotating reported no such key")
        let rotated = try store.apiKey(id: id)
        try Contract.expect(rotated?.secretHash == [7, 7] && rotated?.previous == PreviousSecret(hash: [9, 9], until: Contract.t0.addingTimeInterval(60)),
                            "a rotated key does not read back with its previous secret")
        try Contract.expect(try !store.rotateAPIKey(id: id, secretHash: [5, 5], previousUntil: Contract.t0.addingTimeInterval(90), unlessOverlappingAt: Contract.t0)
                            && store.apiKey(id: id)?.secretHash == [7, 7], "a second rotation cut the first one's overlap")
        try Contract.expect(try !store.rotateAPIKey(id: "ffffffffffffffff", secretHash: [1], previousUntil: Contract.t0, unlessOverlappingAt: nil), "an unknown key rotated")
        try Contract.expect(try store.revokeAPIKey(id: id, now: Contract.t0), "revoking a key reported no such key")
        try Contract.expect(try store.apiKey(id: id)?.0.revokedAt != nil, "a revoked key reads back unrevoked")
        try Contract.expect(try !store.revokeAPIKey(id: "ffffffffffffffff", now: Contract.t0) && store.apiKey(id: "ffffffffffffffff") == nil,
                            "an unknown key exists")
        try store.touchAPIKeys([id, "ffffffffffffffff"], at: Contract.t0)
    }

    /// A client certificate stands for one principal, found by its fingerprint, revoked with it.
    static func certificatePrincipals(_ store: any RegistryStore) throws {
        func newID() -> String { String(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)) }
        let fingerprint = (0..<2).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }.joined()
        let p = Principal(id: newID(), name: "worker-cert", roles: [.worker], tenants: ["ta"], certificateSHA256: fingerprint)
        try store.createAPIKey(p, secretHash: [1], now: Contract.t0)
        try Contract.expect(try store.apiKey(certificateSHA256: fingerprint) == p, "a certificate's principal did not read back whole")
        try Contract.expect(try store.apiKey(id: p.id)?.0.certificateSHA256 == fingerprint, "the key does not name its certificate")
        try Contract.expect(try store.apiKeys().first { $0.principal.id == p.id }?.principal.certificateSHA256 == fingerprint,
                            "the listing does not show the certificate")
        let other = String(fingerprint.reversed())
        try Contract.expect(try store.apiKey(certificateSHA256: other) == nil, "an unknown certificate stands for a principal")
        do {
            try store.createAPIKey(Principal(id: newID(), name: "again", roles: [.admin], tenants: ["tb"], certificateSHA256: fingerprint),
                                   secretHash: [2], now: Contract.t0)
            throw Contract.Violation(description: "one certificate was given to two principals")
        } catch BrokerError.conflict {}
        _ = try store.revokeAPIKey(id: p.id, now: Contract.t0)
        try Contract.expect(try store.apiKey(certificateSHA256: fingerprint)?.revokedAt != nil, "a revoked certificate principal reads back unrevoked")
    }
}
