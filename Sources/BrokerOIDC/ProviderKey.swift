/// ProviderKey names what the broker knows of a provider as seen through one trust: an issuer's
/// discovery document or keys read over connections that trusted `trust`. Caches are keyed by it,
/// so that what one client's anchors vouched for is never answered to a client of other trust.
struct ProviderKey: Hashable, Sendable {
    let issuer: String
    let trust: ProviderTrust

    init(issuer: String, trustAnchors: String?) {
        self.issuer = issuer
        trust = ProviderTrust(anchorsPEM: trustAnchors)
    }
}
