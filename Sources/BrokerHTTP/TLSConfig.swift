/// TLSConfig is one listener's TLS (libmicrohttpd with GnuTLS): its certificate chain and key,
/// read from PEM files at start and again on reload (SIGHUP), and optionally client
/// certificates verified against a CA bundle (mTLS).
public struct TLSConfig: Sendable, Equatable {
    public var certificateFile: String
    public var keyFile: String
    /// Client certificates are asked for and verified against this PEM bundle; nil: none asked.
    public var clientCAFile: String?
    /// A connection without a valid client certificate is refused; else one may use a bearer key.
    public var clientCertificateRequired = true

    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil, clientCertificateRequired: Bool = true) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
        self.clientCertificateRequired = clientCertificateRequired
    }
}
