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
    /// Session tickets are issued and accepted (RFC 5077, RFC 8446 §4.6.1), sealed with a key
    /// drawn at the server's start and kept for its life (reloads included): a returning client
    /// resumes its session instead of a full handshake. Off: every handshake is a full one.
    public var sessionTickets = false

    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil, clientCertificateRequired: Bool = true,
                sessionTickets: Bool = false) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
        self.clientCertificateRequired = clientCertificateRequired
        self.sessionTickets = sessionTickets
    }
}
