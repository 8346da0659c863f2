/// HTTPServerConfig holds the server's limits.
public struct HTTPServerConfig: Sendable {
    public var host: String
    /// 0 picks a free port (see `MHDServer.port`).
    public var port: UInt16
    public var threads: Int
    /// Largest request body accepted; larger ones get 413 before they are read.
    public var maxBodyBytes: Int
    /// Per-connection memory for the request line and headers; beyond it MHD answers 431.
    /// libmicrohttpd 0.9.75 zeroes the whole of it before each request of a kept-alive
    /// connection, so it is paid for on every request: 16 KiB (Node's default), not 32.
    public var maxHeaderBytes: Int
    /// Idle seconds before a connection is closed.
    public var idleTimeout: Int
    public var maxConnections: Int
    /// Connections one client address may hold (0: no cap). Behind a proxy every connection
    /// comes from the proxy's address: raise it or set 0 there.
    public var maxConnectionsPerClient: Int = 256
    /// Seconds a client has to send a request's line and headers, and then its body.
    public var headerTimeout: Double = 10
    public var bodyTimeout: Double = 30
    /// Nil: plain HTTP.
    public var tls: TLSConfig?
    /// The request headers handlers may read (lowercase); others are never copied out of MHD.
    public var headers: [String] = ["authorization", "content-type", "x-request-id", "idempotency-key", "accept", "traceparent", "dpop"]

    public init(host: String = "127.0.0.1", port: UInt16 = 8080, threads: Int = 2, maxBodyBytes: Int = 256 * 1024,
                maxHeaderBytes: Int = 16 * 1024, idleTimeout: Int = 30, maxConnections: Int = 4096) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}
