import BrokerCore

/// ProviderKey names what the broker knows of a provider as seen through one trust: an issuer's
/// discovery document or keys read over connections that trusted `trust`. Caches are keyed by it,
/// so that what one client's anchors vouched for is never answered to a client of other trust.
struct ProviderKey: Hashable, Sendable {
    let source: MetadataSource
    let trust: ProviderTrust

    init(_ source: MetadataSource, trustAnchors: String?) {
        self.source = source
        trust = ProviderTrust(anchorsPEM: trustAnchors)
    }

    var issuer: String { source.issuer }
}
