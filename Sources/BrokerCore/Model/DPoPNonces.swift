import Synchronization

/// DPoPNonces remembers the last `DPoP-Nonce` each server sent (RFC 9449 §8.2 and §9: the
/// client uses it until the server provides another), by a key the caller chooses: a resource
/// server's origin and the client calling it (the outbound proxy). Bounded: forgetting a nonce
/// costs one `use_dpop_nonce` round trip, never a token. Authorization servers' nonces are
/// per client and shared by the fleet instead (`ServerNonce`, `DPoPNonceStore`).
public final class DPoPNonces: Sendable {
    private let byEndpoint = Mutex<[String: String]>([:])
    private static let limit = 1024

    public init() {}

    public subscript(endpoint: String) -> String? {
        get { byEndpoint.withLock { $0[endpoint] } }
        set {
            byEndpoint.withLock { m in
                if m.count >= Self.limit, m[endpoint] == nil { m.removeAll() }
                m[endpoint] = newValue
            }
        }
    }
}
