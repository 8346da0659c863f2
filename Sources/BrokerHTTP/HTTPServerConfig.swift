/// HTTPServerConfig holds the server's limits.
public struct HTTPServerConfig: Sendable {
    public var host: String
    /// 0 picks a free port (see `MHDServer.port`).
    public var port: UInt16
    public var threads: Int
    /// Largest request body accepted; larger ones get 413 before they are read.
    public var maxBodyBytes: Int
    /// Per-connection memory for the request line and headers; beyond it MHD answers 431.
    public var maxHeaderBytes: Int
    /// Idle seconds before a connection is closed.
    public var idleTimeout: Int
    public var maxConnections: Int
    /// The request headers handlers may read (lowercase); others are never copied out of MHD.
    public var headers: [String] = ["authorization", "content-type", "x-request-id", "idempotency-key", "accept"]

    public init(host: String = "127.0.0.1", port: UInt16 = 8080, threads: Int = 2, maxBodyBytes: Int = 256 * 1024,
                maxHeaderBytes: Int = 32 * 1024, idleTimeout: Int = 30, maxConnections: Int = 4096) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}
