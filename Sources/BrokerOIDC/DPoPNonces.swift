import Synchronization

/// DPoPNonces remembers the last `DPoP-Nonce` each server endpoint sent (RFC 9449 §8.2: the
/// client uses it until the server provides another). Bounded: a broker talks to few endpoints,
/// and forgetting a nonce costs one `use_dpop_nonce` round trip, never a token.
final class DPoPNonces: Sendable {
    private let byEndpoint = Mutex<[String: String]>([:])
    private static let limit = 1024

    subscript(endpoint: String) -> String? {
        get { byEndpoint.withLock { $0[endpoint] } }
        set {
            byEndpoint.withLock { m in
                if m.count >= Self.limit, m[endpoint] == nil { m.removeAll() }
                m[endpoint] = newValue
            }
        }
    }
}
