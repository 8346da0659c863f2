import Foundation

extension IssuerDirectory {
    /// The endpoints a client's requests go to: its provider's metadata (discovery, or RFC 8414)
    /// with the descriptor's explicit endpoints over it, or, for a provider that publishes no
    /// metadata, the descriptor's endpoints alone. A client authenticating with mutual TLS uses
    /// the provider's `mtls_endpoint_aliases` in preference (RFC 8705 §5).
    public func metadata(for client: ClientRegistration, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        guard let source = client.metadataSource else {
            guard let m = IssuerMetadata.explicit(issuer: client.issuer, client.descriptor.endpoints) else {
                throw .metadata("the provider descriptor gives no token endpoint")
            }
            return m
        }
        let m = try metadata(source, trustAnchors: client.trustAnchors, now: now)
        return (client.authMethod.needsCertificate ? m.mutualTLSAliased() : m).overridden(by: client.descriptor.endpoints)
    }

    /// Forgets the client's cached metadata (rate-limited); false when it has none to read.
    @discardableResult
    public func reread(for client: ClientRegistration, now: Date) -> Bool {
        client.metadataSource.map { reread($0, trustAnchors: client.trustAnchors, now: now) } ?? false
    }
}
