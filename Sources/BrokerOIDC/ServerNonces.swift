import BrokerCore
import Foundation
import Synchronization

/// ServerNonces holds each client's current DPoP nonce at its authorization server (RFC 9449
/// §8): one per (tenant, client), shared by every endpoint of that server the broker calls —
/// token, pushed authorization request, revocation, userinfo — and by every replica. A nonce is learned
/// from any answer's `DPoP-Nonce`, success or refusal; a new one is written to the store (only
/// when it differs) and announced on the change feed, so that another replica's next proof
/// carries it without a refused round trip of its own. A replica reads the store on a client's
/// first use and after each announcement.
///
/// Thread-safe. A store that cannot be read or written costs at most one refused request (the
/// server then sends its nonce again), never a token: its failures are not raised.
public final class ServerNonces: Sendable {
    private struct Held {
        var byClient: [String: ServerNonce?] = [:]
        /// Bumped by every `forget`: a store read that raced with one is not kept.
        var generation: UInt64 = 0
    }

    private let store: (any DPoPNonceStore)?
    private let feed: (any ChangeFeed)?
    private let held = Mutex(Held())
    private static let limit = 4096

    /// Without a store the nonces are this process's own (tests, tools).
    public init(store: (any DPoPNonceStore)? = nil, feed: (any ChangeFeed)? = nil) {
        self.store = store
        self.feed = feed
    }

    private static func key(_ tenant: String, _ client: String) -> String { tenant + "\u{0}" + client }

    /// The client's current nonce at its issuer, or nil when none is known.
    public func current(for client: ClientRegistration) -> ServerNonce? {
        let k = Self.key(client.tenant, client.id)
        let (cached, generation) = held.withLock { ($0.byClient[k], $0.generation) }
        let n: ServerNonce?
        if let cached { n = cached } else {
            n = (try? store?.nonce(tenant: client.tenant, client: client.id)) ?? nil
            held.withLock { h in
                guard h.generation == generation, h.byClient[k] == nil else { return }
                if h.byClient.count >= Self.limit { h.byClient.removeAll() }
                h.byClient[k] = .some(n)
            }
        }
        return n?.issuer == client.issuer ? n : nil
    }

    /// Takes `value` as the client's current nonce, learned from `endpoint`'s answer at `now`.
    public func learn(_ value: String, from endpoint: IdPEndpoint, client: ClientRegistration, now: Date) {
        guard current(for: client)?.value != value else { return }
        let n = ServerNonce(tenant: client.tenant, client: client.id, issuer: client.issuer, value: value, learnedFrom: endpoint, learnedAt: now)
        held.withLock { h in
            if h.byClient.count >= Self.limit { h.byClient.removeAll() }
            h.byClient[Self.key(client.tenant, client.id)] = .some(n)
        }
        if let store, (try? store.learn(n)) == true { feed?.publish(.dpopNonce(tenant: client.tenant, client: client.id)) }
    }

    /// Drops what a change makes stale: the client's nonce (learned elsewhere), a client or
    /// tenant changed, everything after a resync.
    public func forget(_ change: Change) {
        held.withLock { h in
            switch change {
            case .dpopNonce(let tenant, let client), .client(let tenant, let client): h.byClient[Self.key(tenant, client)] = nil
            case .tenant(let tenant): h.byClient = h.byClient.filter { !$0.key.hasPrefix(tenant + "\u{0}") }
            case .resync: h.byClient.removeAll()
            default: return
            }
            h.generation &+= 1
        }
    }
}
