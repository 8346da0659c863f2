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
