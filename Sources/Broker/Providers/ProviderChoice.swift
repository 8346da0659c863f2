/// ProviderChoice is what a registration says of its provider: a catalogue entry (`provider`),
/// a protocol, and a descriptor given as a JSON merge patch (RFC 7396) over the entry, as
/// compact JSON text. All nil: an OpenID provider found by discovery.
public struct ProviderChoice: Sendable, Equatable {
    public var provider: String?
    public var protocolName: String?
    public var patch: String?

    public init(provider: String? = nil, protocolName: String? = nil, patch: String? = nil) {
        self.provider = provider
        self.protocolName = protocolName
        self.patch = patch
    }

    public var isOpenIDDefault: Bool { provider == nil && patch == nil && (protocolName == nil || protocolName == "oidc") }
}
