import Foundation

/// HTTPConnectionSettings bound the connections BlockingHTTP keeps to providers (and, apart,
/// those CurlUpstreamTransport keeps to APIs): idle
/// connections are kept per (scheme, host, port, trust, client TLS identity), at most
/// `idlePerHost` for each and `idleTotal` in all, each for at most `keepAlive` seconds (less
/// when the server's `Keep-Alive: timeout=` says so).
public struct HTTPConnectionSettings: Sendable, Equatable {
    /// PEM bundle of the CAs trusted for provider connections; nil: the system bundle.
    public var caFile: String?
    public var keepAlive: TimeInterval = 120
    public var idlePerHost = 8
    public var idleTotal = 2048

    public init(caFile: String? = nil) { self.caFile = caFile }

    /// The number of CA certificates in `caFile`, nil when it cannot be read or holds none.
    public static func certificates(inBundle path: String) -> Int? { TrustStore.certificates(in: path) }
}
