/// ProviderTrust is whom a TLS connection to a provider trusts: the deployment's CA file
/// (`deployment`, the system bundle unless configured), or a client registration's own trust
/// anchors (PEM), which replace the deployment's for that client's provider and are never
/// shared with another client's connections. Hostname verification is always on.
public struct ProviderTrust: Sendable, Hashable {
    /// The client's own anchors, PEM; nil: the deployment's CA file.
    public let anchorsPEM: String?

    public static let deployment = ProviderTrust(anchorsPEM: nil)

    public init(anchorsPEM: String?) {
        self.anchorsPEM = anchorsPEM.flatMap { $0.isEmpty ? nil : $0 }
    }
}
