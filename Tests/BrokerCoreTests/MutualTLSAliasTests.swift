import BrokerCore
import Foundation
import Testing

/// RFC 8705 §5: a client doing mutual TLS uses the provider's `mtls_endpoint_aliases` in
/// preference to the top-level endpoints, and the top-level one where no alias is given.
@Suite("mtls_endpoint_aliases")
struct MutualTLSAliasTests {
    static func metadata(aliases: [String: URL]?) -> IssuerMetadata {
        let base = "https://idp.example"
        var m = IssuerMetadata(issuer: base, tokenEndpoint: URL(string: base + "/token")!, authorizationEndpoint: URL(string: base + "/authorize"),
                               jwksURI: URL(string: base + "/jwks"), revocationEndpoint: URL(string: base + "/revoke"), endSessionEndpoint: nil,
                               issParameterSupported: true, introspectionEndpoint: URL(string: base + "/introspect"),
                               pushedAuthorizationRequestEndpoint: URL(string: base + "/par"))
        m.mtlsEndpointAliases = aliases
        return m
    }

    @Test("each aliased endpoint is replaced; the others, and the browser's authorization endpoint, stay")
    func aliased() {
        let m = Self.metadata(aliases: ["token_endpoint": URL(string: "https://mtls.idp.example/token")!,
                                        "revocation_endpoint": URL(string: "https://mtls.idp.example/revoke")!]).mutualTLSAliased()
        #expect(m.tokenEndpoint.absoluteString == "https://mtls.idp.example/token")
        #expect(m.revocationEndpoint?.absoluteString == "https://mtls.idp.example/revoke")
        #expect(m.introspectionEndpoint?.absoluteString == "https://idp.example/introspect")
        #expect(m.pushedAuthorizationRequestEndpoint?.absoluteString == "https://idp.example/par")
        #expect(m.authorizationEndpoint?.absoluteString == "https://idp.example/authorize")
    }

    @Test("without aliases the metadata is as published")
    func none() {
        #expect(Self.metadata(aliases: nil).mutualTLSAliased() == Self.metadata(aliases: nil))
    }
}

/// What else RFC 8705 changes in the core: FAPI 2.0 accepts mutual TLS as the client's
/// authentication (§5.3.2.1), and a refusal names the certificate presented.
@Suite("Mutual TLS in the core")
struct MutualTLSCoreTests {
    static func client(_ method: ClientAuthMethod) -> ClientRegistration {
        ClientRegistration(tenant: "t", id: "c", issuer: "https://idp.example", clientID: "cid", authMethod: method,
                           redirectURI: "https://broker.example/v1/callback", scopes: ["openid"], dpopAlgorithm: .es256, profile: .fapi2)
    }

    @Test("FAPI 2.0 takes tls_client_auth and self_signed_tls_client_auth as client authentication, not a secret")
    func fapi2() {
        #expect(FAPI2Profile.clientProblems(Self.client(.tlsClientAuth)).isEmpty)
        #expect(FAPI2Profile.clientProblems(Self.client(.selfSignedTLSClientAuth)).isEmpty)
        #expect(FAPI2Profile.clientProblems(Self.client(.clientSecretBasic)).first?.hasPrefix("FAPI 2.0 needs auth_method private_key_jwt, tls_client_auth") == true)
        #expect(ClientAuthMethod.tlsClientAuth.needsCertificate && !ClientAuthMethod.tlsClientAuth.needsSecret)
    }

    @Test("a refusal's summary names the client certificate presented, by its x5t#S256")
    func refusalNamesCertificate() {
        var c = RefusalContext(endpoint: .token, proof: false, nonceFrom: nil)
        #expect(!c.summary.contains("certificate"))
        c.certificate = "u6QWgDyhWWQwbDdkweGXz2ozwNYRX_NX0jpZ3fpIjNo"
        #expect(c.summary.hasSuffix(", presenting the client certificate x5t#S256 u6QWgDyhWWQwbDdkweGXz2ozwNYRX_NX0jpZ3fpIjNo"))
    }
}

@Suite("Client certificate material printed")
struct ClientCertificatePrintingTests {
    @Test("a credential or an input printed by mistake, alone or inside another value, shows no PEM")
    func redacted() {
        let c = ClientTLSCredential(certificatePEM: "-----BEGIN CERTIFICATE-----", keyPEM: "-----BEGIN PRIVATE KEY-----", thumbprint: "x5t")
        let i = ClientCertificateInput(chain: "-----BEGIN CERTIFICATE-----", key: "-----BEGIN PRIVATE KEY-----")
        for text in ["\(c)", String(reflecting: c), "\(Optional(c) as Any)", "\(i)", String(reflecting: i), "\([i])"] {
            #expect(!text.contains("BEGIN"), "\(text)")
        }
    }
}
