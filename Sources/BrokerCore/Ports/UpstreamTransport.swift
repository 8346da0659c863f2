/// UpstreamTransport makes one HTTP exchange with an API on behalf of the outbound proxy,
/// streaming both bodies. It is blocking: called on a proxy worker thread, never on an HTTP
/// server thread.
///
/// Guarantees every implementation keeps: no redirect is ever followed (a 3xx comes back as
/// it is); unless `allowPrivateAddresses`, no connection is made to a loopback, private,
/// link-local (cloud metadata) or otherwise non-public address, checked on the address
/// actually connected to, so a name that resolves there is refused as well; the response
/// body is never held whole.
public protocol UpstreamTransport: Sendable {
    /// Sends `request` and its body. `head` is called once, with the status and headers, before
    /// any byte of the body; it answers where the body goes, or nil to drop it (a 401 about to
    /// be retried, say), and then the body is written into that sink as it arrives and the sink
    /// finished. Throws when no complete head came back.
    func send(_ request: UpstreamRequest, head: (UpstreamHead) -> (any ByteSink)?) throws(UpstreamFailure)
}

/// UpstreamRequest is what the proxy sends: the credentials are already in `headers`.
public struct UpstreamRequest: Sendable {
    public var method: String
    /// Absolute `https://` (or, where the client allows it, `http://`) URL.
    public var url: String
    public var headers: [(name: String, value: String)]
    /// Nil: a request without a body.
    public var body: (any ByteSource)?
    public var allowPrivateAddresses: Bool
    /// Bounds the TCP and TLS connect, in seconds.
    public var connectTimeout: Double
    /// Bounds the whole exchange, the body included, in seconds.
    public var totalTimeout: Double
    /// A body longer than this is cut off (the sink is finished incomplete).
    public var maxResponseBytes: Int
    /// The client certificate and key presented when the upstream asks (RFC 8705 mutual TLS);
    /// nil: none. A connection made with one serves only requests presenting the same.
    public var clientCertificate: ClientTLSCredential?

    public init(method: String, url: String, headers: [(name: String, value: String)], body: (any ByteSource)? = nil,
                allowPrivateAddresses: Bool = false, connectTimeout: Double = 5, totalTimeout: Double = 60,
                maxResponseBytes: Int = 1 << 30, clientCertificate: ClientTLSCredential? = nil) {
        self.clientCertificate = clientCertificate
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.allowPrivateAddresses = allowPrivateAddresses
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maxResponseBytes = maxResponseBytes
    }
}

/// UpstreamHead is an upstream's status and headers (names as sent; every header, repeated
/// ones included, in order).
public struct UpstreamHead: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]

    public init(status: Int, headers: [(name: String, value: String)]) {
        self.status = status
        self.headers = headers
    }

    /// The first header named `name`, compared without regard to case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// UpstreamFailure is why an exchange gave no head. Reasons are generic: they quote nothing
/// received and no credential.
public enum UpstreamFailure: Error, Sendable, Equatable {
    /// Never sent (DNS, connection refused, connect timeout, TLS): safe to try again.
    case notSent(String)
    /// The address connected to is not public and the client does not allow that.
    case addressRefused
    /// The request may have reached the upstream (reset, timeout after sending).
    case unanswered(String)
    /// The caller's body was abandoned before it was sent whole.
    case bodyAbandoned
}
