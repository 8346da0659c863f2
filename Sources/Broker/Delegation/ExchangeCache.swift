import BrokerCore
import Foundation

/// ExchangeCache keeps exchanged tokens per (tenant, session, exchange, actor) until they expire,
/// so that a second identical ask costs no IdP call. Bounded: forgetting costs one exchange.
/// A revoked or ended session's tokens are never served: every ask gets the session's own
/// token first, which such a session refuses.
final class ExchangeCache: Sendable {
    struct Key: Hashable, Sendable {
        let tenant: String
        let session: String
        let ask: TokenExchange
        /// The principal named by the actor token, when one is sent.
        let actor: String?
    }

    /// Read on every exchanged hand-out (the key hashed under the lock): readers share it.
    private let held = ReadMostly<[Key: IssuedToken]>([:])
    private static let limit = 100_000

    /// The token held for `key` that still lives `minTTL` at `now`.
    func get(_ key: Key, now: Date, minTTL: TimeInterval) -> IssuedToken? {
        guard let t = held.read({ $0[key] }), t.expiresAt.timeIntervalSince(now) >= max(1, minTTL) else { return nil }
        return t
    }

    func put(_ key: Key, _ token: IssuedToken) {
        held.write { h in
            if h.count >= Self.limit { h.removeAll() }
            h[key] = token
        }
    }
}
