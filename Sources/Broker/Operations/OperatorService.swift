import BrokerCore
import Foundation

/// OperatorService manages tenants, client registrations and API keys for both the operator
/// routes and the CLI, with the same validation. Secrets are write-only: nothing here returns one,
/// except a new API key, once.
public struct OperatorService: Sendable {
    let store: any RegistryStore
    let hasher: any SecretHasher
    let feed: any ChangeFeed
    let audit: any AuditSink
    let clock: any Clock
    let assertionKeys: AssertionKeys
    let directory: any IssuerDirectory
    /// Judges a registration's own trust anchors (the cryptography library's view of them).
    let anchors: any TrustAnchorCheck
    /// This replica's key cache: dropped at once on a change here (others hear of it by NOTIFY).
    let auth: Authenticator
    /// The provider descriptors registrations may name.
    let catalogue: ProviderCatalogue
    /// Reads a registration's TLS client certificate and key (RFC 8705); nil: none accepted.
    let certificates: (any ClientCertificateCheck)?

    public init(store: any RegistryStore, hasher: any SecretHasher, feed: any ChangeFeed, audit: any AuditSink, clock: any Clock,
                assertionKeys: AssertionKeys, directory: any IssuerDirectory, anchors: any TrustAnchorCheck, auth: Authenticator,
                catalogue: ProviderCatalogue = ProviderCatalogue(), certificates: (any ClientCertificateCheck)? = nil) {
        self.certificates = certificates
        self.store = store
        self.hasher = hasher
        self.feed = feed
        self.audit = audit
        self.clock = clock
        self.assertionKeys = assertionKeys
        self.directory = directory
        self.anchors = anchors
        self.auth = auth
        self.catalogue = catalogue
    }

    public func putTenant(id: String, name: String, actor: String) throws -> (Tenant, created: Bool) {
        guard Tenant.isValidID(id) else {
            throw BrokerError.badRequest(code: "invalid_request", message: "tenant id must match [a-z0-9][a-z0-9-]{0,62}")
        }
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(trimmed.count) else { throw BrokerError.badRequest(code: "invalid_request", message: "'name' must be 1...200 characters") }
        let r = try store.putTenant(id: id, name: trimmed, now: clock.now())
        feed.publish(.tenant(id))
        audit.record(AuditEvent(at: clock.now(), actor: actor, action: r.created ? .tenantCreate : .tenantUpdate, tenant: id, session: nil, outcome: "ok"))
        return r
    }

    /// A client registration as the operator sees it: never a secret, but the public key the
    /// broker signs its client assertions with (to register at the IdP) when it has one.
    public struct ClientView: Sendable {
        public let client: ClientRegistration
        public let publicKey: JSONWebKey?
    }

    /// Creates or replaces a client registration. A secret method needs a secret, given now or
    /// stored before; `private_key_jwt` gets a key made here (kept while its algorithm stays).
    /// With `verify` the issuer's discovery document is read first and must name exactly this
    /// issuer, so that a trailing slash or a wrong port is refused here, not at the first login.
    /// `dpopAuto`: the registration's DPoP algorithm is kept only when the issuer advertises it
    /// (RFC 9449 §5.1); without `verify` nothing is known, and the client stays bearer.
    /// `provider`: the catalogue entry and descriptor the registration names (ProviderCatalogue);
    /// a provider that publishes no metadata is checked against nothing but its descriptor.
    /// `certificate`: the TLS client certificate chain and key (PEM) of a `tls_client_auth` or
    /// `self_signed_tls_client_auth` client, checked here (a 400 `invalid_tls_client_certificate`
    /// names the fault) and sealed; nil keeps the stored one, which such a client must have.
    public func putClient(_ reg: ClientRegistration, secret: String?, verify: Bool = true, dpopAuto: Bool = false,
                          provider: ProviderChoice = ProviderChoice(), certificate: ClientCertificateInput? = nil,
                          actor: String) throws -> (ClientView, created: Bool) {
        var c = try catalogue.resolve(reg, provider)
        func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }
        guard Slug.isValid(c.id) else { throw bad("client id must match [a-z0-9][a-z0-9-]{0,62}") }
        guard try store.tenant(c.tenant) != nil else { throw BrokerError.notFound("tenant") }
        for (what, url) in c.descriptor.urls {
            if let p = URLRules.problem(url, what: what) { throw BrokerError.badRequest(code: "invalid_descriptor", message: "descriptor: \(p)") }
        }
        if let p = URLRules.issuerProblem(c.issuer) { throw bad(p) }
        if let p = URLRules.problem(c.redirectURI, what: "redirect_uri") { throw bad(p) }
        for u in c.redirectAfterAllowed { if let p = URLRules.problem(u, what: "redirect_after_allowed entry") { throw bad(p) } }
        guard !c.clientID.isEmpty, c.clientID.count <= 512 else { throw bad("'client_id' must be 1...512 characters") }
        guard c.scopes.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else { throw bad("'scopes' must be scope tokens") }
        if let p = c.refreshPolicy.problem { throw bad("refresh_policy: \(p)") }
        guard (1...1000).contains(c.maxConcurrentRefreshes) else { throw bad("'max_concurrent_refreshes' must be 1...1000") }
        if let s = secret, s.isEmpty || s.count > 4096 { throw bad("'client_secret' must be 1...4096 characters") }
        if let pem = c.trustAnchors, let p = anchors.problem(pem: pem, now: clock.now()) {
            throw BrokerError.badRequest(code: "invalid_trust_anchors", message: "trust_anchors: \(p)")
        }
        if c.authMethod == .privateKeyJWT { c.assertionAlgorithm = c.assertionAlgorithm ?? .es256 }
        let credential = try clientCertificate(&c, certificate)
        if dpopAuto, !verify { c.dpopAlgorithm = nil }
        if c.profile == .fapi2, !verify {
            throw bad("a FAPI 2.0 client is registered only after its issuer's metadata is read (no ?verify=false)")
        }
        if verify {
            let meta = try checkIssuer(c)
            if dpopAuto, let alg = c.dpopAlgorithm, !(meta.dpopSigningAlgorithms ?? []).contains(alg.rawValue) { c.dpopAlgorithm = nil }
            if c.profile == .fapi2 {
                let own = FAPI2Profile.clientProblems(c)
                if !own.isEmpty { throw BrokerError.badRequest(code: "unservable_client", message: own.joined(separator: "; ")) }
            }
            // A client the broker cannot serve at this issuer is refused now, with the reason.
            let problems = ClientServability.problems(c, meta)
            if !problems.isEmpty {
                throw BrokerError.badRequest(code: "unservable_client", message: problems.joined(separator: "; ") + " (?verify=false registers it anyway)")
            }
        }
        if c.authMethod.needsSecret, secret == nil, try store.clientSecret(tenant: c.tenant, id: c.id) == nil {
            throw bad("auth_method \(c.authMethod.rawValue) needs a client_secret")
        }
        var newKey: [UInt8]?, key: JSONWebKey?     // the key made now (DER); the public key in force after the write
        if c.authMethod == .privateKeyJWT {
            let alg = c.assertionAlgorithm ?? .es256
            c.assertionAlgorithm = alg
            if try store.client(tenant: c.tenant, id: c.id)?.assertionAlgorithm == alg,
               let der = try store.assertionKey(tenant: c.tenant, id: c.id), let old = try assertionKeys.publicKey(der: der, alg: alg) {
                key = old
            } else {
                let der = try assertionKeys.generate(alg)
                newKey = der
                key = try assertionKeys.publicKey(der: der, alg: alg)
            }
        } else {
            c.assertionAlgorithm = nil
        }
        let r = try store.putClient(c, secret: c.authMethod.needsSecret ? secret : nil, assertionKey: newKey, certificate: credential,
                                    now: clock.now())
        feed.publish(.client(tenant: c.tenant, id: c.id))
        audit.record(AuditEvent(at: clock.now(), actor: actor, action: r.created ? .clientCreate : .clientUpdate, tenant: c.tenant, session: nil, outcome: "ok"))
        return (ClientView(client: c, publicKey: key), r.created)
    }

    /// The certificate a registration brings, checked (nil: none new), with its view set on `c`:
    /// the new one's, or the stored one's when none is given. A client of another method keeps
    /// none (its stored one is dropped on the write).
    private func clientCertificate(_ c: inout ClientRegistration, _ given: ClientCertificateInput?) throws -> ClientTLSCredential? {
        guard c.authMethod.needsCertificate else {
            if c.handOutCertificateBound {
                throw BrokerError.badRequest(code: "invalid_request",
                                             message: "'hand_out_certificate_bound' is only for auth_method tls_client_auth or self_signed_tls_client_auth")
            }
            if given != nil {
                throw BrokerError.badRequest(code: "invalid_request",
                                             message: "'tls_client_certificate' is only for auth_method tls_client_auth or self_signed_tls_client_auth")
            }
            c.tlsClientCertificate = nil
            return nil
        }
        guard let given else {
            guard let stored = try store.client(tenant: c.tenant, id: c.id)?.tlsClientCertificate,
                  try store.clientCertificate(tenant: c.tenant, id: c.id) != nil else {
                throw BrokerError.badRequest(code: "invalid_request",
                                             message: "auth_method \(c.authMethod.rawValue) needs a tls_client_certificate and its tls_client_key")
            }
            c.tlsClientCertificate = stored
            return nil
        }
        guard let certificates else { throw BrokerError.internalError }
        switch certificates.inspect(chain: given.chain, key: given.key, now: clock.now()) {
        case .failure(let p): throw BrokerError.badRequest(code: "invalid_tls_client_certificate", message: p.message)
        case .success(let info):
            c.tlsClientCertificate = info
            // Only the PEM blocks are kept (text around them is dropped).
            let chain = (TrustAnchorRules.blocks(given.chain) ?? []).map(\.text).joined()
            let key = (TrustAnchorRules.blocks(given.key) ?? []).map(\.text).joined()
            return ClientTLSCredential(certificatePEM: chain, keyPEM: key, thumbprint: info.thumbprint)
        }
    }

    /// Reads the provider's metadata (OpenID Connect Discovery §4, or RFC 8414 §3) over a
    /// connection that trusts what the registration will trust (`trustAnchors`, or the
    /// deployment's): refused with 400 `invalid_issuer` when it cannot be read or names another
    /// issuer. A provider without metadata has its descriptor's endpoints only.
    private func checkIssuer(_ c: ClientRegistration) throws -> IssuerMetadata {
        guard let source = c.metadataSource else {
            guard let m = IssuerMetadata.explicit(issuer: c.issuer, c.descriptor.endpoints) else { throw BrokerError.internalError }
            return m
        }
        do throws(TokenEndpointError) {
            return try directory.verify(source, trustAnchors: c.trustAnchors).overridden(by: c.descriptor.endpoints)
        } catch {
            throw BrokerError.badRequest(code: "invalid_issuer", message: "issuer \(source.issuer): \(error.reason) (?verify=false, or --no-verify, registers it without this check)")
        }
    }

    /// The registration and its public assertion key, read from the store (not the cache).
    public func clientView(tenant: String, id: String) throws -> ClientView {
        guard let c = try store.client(tenant: tenant, id: id) else { throw BrokerError.notFound("client") }
        var key: JSONWebKey?
        if let alg = c.assertionAlgorithm, let der = try store.assertionKey(tenant: tenant, id: id) {
            key = try assertionKeys.publicKey(der: der, alg: alg)
        }
        return ClientView(client: c, publicKey: key)
    }

    /// Creates an API key; returns the principal and the key, which is shown this once only.
    /// The longest `expiresIn` a key may have: ten years.
    public static let maxKeyLifetime: TimeInterval = 10 * 365 * 86_400

    /// A new key; `expiresIn` seconds from now it is refused (nil: never). With
    /// `certificateSHA256` the principal is the holder of that client certificate on an mTLS
    /// listener, and has no usable bearer key (`key` is nil).
    public func createKey(name: String, roles: Set<Role>, tenants: Set<String>, expiresIn: TimeInterval? = nil,
                          certificateSHA256: String? = nil, actor: String) throws -> (Principal, key: String?) {
        let certificate = certificateSHA256.map { $0.lowercased().replacingOccurrences(of: ":", with: "") }
        if let certificate, !Principal.isFingerprint(certificate) {
            throw BrokerError.badRequest(code: "invalid_request", message: "'certificate_sha256' must be a SHA-256 in hex (64 digits, colons allowed)")
        }
        if let e = expiresIn, !(1...Self.maxKeyLifetime).contains(e) {
            throw BrokerError.badRequest(code: "invalid_request", message: "'expires_in' must be 1...\(Int(Self.maxKeyLifetime)) seconds")
        }
        guard (1...200).contains(name.count) else { throw BrokerError.badRequest(code: "invalid_request", message: "'name' must be 1...200 characters") }
        guard !roles.isEmpty else { throw BrokerError.badRequest(code: "invalid_request", message: "'roles' must name at least one role") }
        guard !tenants.isEmpty, tenants.allSatisfy({ $0 == Principal.allTenants || Tenant.isValidID($0) }) else {
            throw BrokerError.badRequest(code: "invalid_request", message: "'tenants' must list tenant ids, or \"*\"")
        }
        for t in tenants where t != Principal.allTenants {
            guard try store.tenant(t) != nil else { throw BrokerError.notFound("tenant '\(t)'") }
        }
        var rng = SystemRandomNumberGenerator()
        let id = Authenticator.newID(using: &rng)
        let (key, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
        let p = Principal(id: id, name: name, roles: roles, tenants: tenants, expiresAt: expiresIn.map { clock.now().addingTimeInterval($0) },
                          certificateSHA256: certificate)
        try store.createAPIKey(p, secretHash: hash, now: clock.now())
        feed.publish(.apiKey(id: id))   // replicas forget what they knew of this certificate
        audit.record(AuditEvent(at: clock.now(), actor: actor, action: .apiKeyCreate, tenant: nil, session: nil, outcome: id))
        return (p, certificate == nil ? key : nil)
    }

    /// Every key, newest first, with its last use and expiry (never a secret).
    public func listKeys() throws -> [APIKeyRecord] { try store.apiKeys() }

    /// A key outside the tenants of the operator acting (nil: the CLI, which reaches all) is
    /// not found for it: keys learn nothing of keys they cannot touch.
    private func reachable(_ p: Principal, by actor: Principal?) throws {
        if let actor, !actor.tenants.contains(Principal.allTenants), !p.tenants.isSubset(of: actor.tenants) {
            throw BrokerError.notFound("api key")
        }
    }

    /// The longest overlap a rotation may give the old secret: a week.
    public static let maxRotationOverlap: TimeInterval = 7 * 86_400

    /// Gives a key a new secret (shown this once); the old one keeps working for `overlap`
    /// seconds, so that its holders move over without a gap. Same id, roles and tenants: the same
    /// principal in the audit trail. `actor` limits which keys the caller may rotate.
    public func rotateKey(id: String, overlap: TimeInterval, actor: Principal?) throws -> (Principal, key: String, previousUntil: Date) {
        guard (0...Self.maxRotationOverlap).contains(overlap) else {
            throw BrokerError.badRequest(code: "invalid_request", message: "'overlap_seconds' must be 0...\(Int(Self.maxRotationOverlap))")
        }
        guard let (p, _, _) = try store.apiKey(id: id) else { throw BrokerError.notFound("api key") }
        try reachable(p, by: actor)
        guard p.isValid(at: clock.now()), p.certificateSHA256 == nil else {
            throw BrokerError.conflict(code: "conflict", message: "only a live bearer key can be rotated (revoked, expired or a certificate principal)")
        }
        var rng = SystemRandomNumberGenerator()
        let (key, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
        let until = clock.now().addingTimeInterval(overlap)
        // overlap 0 cuts any overlap still running (the deliberate "now"); else a rotation
        // waits for the previous one's overlap to end.
        guard try store.rotateAPIKey(id: id, secretHash: hash, previousUntil: until, unlessOverlappingAt: overlap == 0 ? nil : clock.now()) else {
            guard let (_, _, previous) = try store.apiKey(id: id) else { throw BrokerError.notFound("api key") }
            throw BrokerError.conflict(code: "rotation_in_progress", message: "the key's previous secret is accepted until "
                                       + (previous.map { ISO8601DateFormatter().string(from: $0.until) } ?? "?")
                                       + "; rotate again after that, or with overlap_seconds 0 to cut it now")
        }
        feed.publish(.apiKey(id: id))
        auth.forget(.apiKey(id: id))
        audit.record(AuditEvent(at: clock.now(), actor: actor?.id ?? "cli", action: .apiKeyRotate, tenant: nil, session: nil, outcome: id))
        return (p, key, until)
    }

    /// Revokes a key (idempotent); `within` limits which keys the caller may revoke.
    public func revokeKey(id: String, actor: Principal?) throws {
        guard let (p, _, _) = try store.apiKey(id: id) else { throw BrokerError.notFound("api key") }
        try reachable(p, by: actor)
        _ = try store.revokeAPIKey(id: id, now: clock.now())
        feed.publish(.apiKey(id: id))
        auth.forget(.apiKey(id: id))
        audit.record(AuditEvent(at: clock.now(), actor: actor?.id ?? "cli", action: .apiKeyRevoke, tenant: nil, session: nil, outcome: id))
    }
}
