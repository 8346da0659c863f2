import BrokerCore

/// ProviderTrust is whom a TLS connection to a provider trusts: the deployment's CA file
/// (`deployment`, the system bundle unless configured), or a client registration's own trust
/// anchors (PEM), which replace the deployment's for that client's provider and are never
/// shared with another client's connections. Hostname verification is always on. With a
/// `clientCertificate` the connection also presents that client's certificate (RFC 8705 mutual
/// TLS); such a connection serves only requests presenting the same certificate.
public struct ProviderTrust: Sendable, Hashable {
    /// The client's own anchors, PEM; nil: the deployment's CA file.
    public let anchorsPEM: String?
    /// The certificate chain and key presented when the server asks; nil: none.
    public let clientCertificate: ClientTLSCredential?

    public static let deployment = ProviderTrust(anchorsPEM: nil)

    public init(anchorsPEM: String?, clientCertificate: ClientTLSCredential? = nil) {
        self.anchorsPEM = anchorsPEM.flatMap { $0.isEmpty ? nil : $0 }
        self.clientCertificate = clientCertificate
    }
}
