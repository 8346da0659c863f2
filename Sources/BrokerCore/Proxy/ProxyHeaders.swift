import Foundation

/// ProxyHeaders decides which headers cross the proxy. Toward the upstream: never the hop-by-hop
/// ones (RFC 9110 §7.6.1, and every header the `Connection` header names), `Host` (the
/// transport writes the upstream's), the caller's `Authorization`, `Proxy-Authorization` and
/// `DPoP` (the broker writes its own credentials), `Content-Length` (the transport frames the
/// body), nor the broker's own `Tokenbroker-*` selector headers. Back toward the caller: the
/// upstream's headers less the hop-by-hop ones and the framing, which the broker's server writes.
public enum ProxyHeaders {
    public typealias Header = (name: String, value: String)

    /// RFC 9110 §7.6.1 and the fields that predate it.
    static let hopByHop: Set<String> = ["connection", "proxy-connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
                                        "proxy-authenticate", "proxy-authorization"]
    /// Never forwarded to an upstream, whatever the caller sends.
    static let neverForwarded: Set<String> = ["host", "authorization", "dpop", "content-length", "expect"]

    /// The prefix of the broker's own request headers (the session selectors).
    public static let ownPrefix = "tokenbroker-"

    /// The header a caller gets when its 401 was answered after a forced refresh.
    public static let tokenRefreshed = "Tokenbroker-Token-Refreshed"

    /// The caller's headers that go on to the upstream, in order.
    public static func request(_ headers: [Header]) -> [Header] {
        let named = connectionNamed(headers)
        return headers.filter { h in
            let n = h.name.lowercased()
            return !hopByHop.contains(n) && !neverForwarded.contains(n) && !named.contains(n) && !n.hasPrefix(ownPrefix)
        }
    }

    /// The upstream's headers that go back to the caller, in order.
    public static func response(_ headers: [Header]) -> [Header] {
        let named = connectionNamed(headers)
        return headers.filter { h in
            let n = h.name.lowercased()
            return !hopByHop.contains(n) && !named.contains(n) && n != "content-length"
        }
    }

    /// The header names listed in `Connection` (lowercase).
    static func connectionNamed(_ headers: [Header]) -> Set<String> {
        var out = Set<String>()
        for h in headers where h.name.lowercased() == "connection" {
            for n in h.value.split(separator: ",") { out.insert(n.trimmingCharacters(in: .whitespaces).lowercased()) }
        }
        return out
    }
}
