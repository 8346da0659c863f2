import BrokerCore
import Foundation
import Synchronization

/// InMemoryDPoPNonceStore is the DPoPNonceStore for unit tests; it honours DPoPNonceStoreContract.
public final class InMemoryDPoPNonceStore: DPoPNonceStore {
    private let rows = Mutex<[String: ServerNonce]>([:])
    public init() {}

    private func key(_ tenant: String, _ client: String) -> String { tenant + "\u{0}" + client }

    public func nonce(tenant: String, client: String) throws -> ServerNonce? { rows.withLock { $0[key(tenant, client)] } }

    public func learn(_ n: ServerNonce) throws -> Bool {
        rows.withLock { m in
            let k = key(n.tenant, n.client)
            if let held = m[k], held.value == n.value, held.issuer == n.issuer { return false }
            m[k] = n
            return true
        }
    }
}
