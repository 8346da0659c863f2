import Foundation
import BrokerCore
import Synchronization

/// Authenticator turns an `Authorization: Bearer` header into a Principal.
///
/// Keys look like `tbk_<16 hex id>_<43 base64url secret>` (256 random bits). The id finds the
/// stored SHA-256 of the secret, and the hashes are compared in constant time, so that the
/// lookup leaks nothing about the secret. Principals are cached for `maxAge` and dropped at
/// once on revocation (change feed).
///
/// Thread-safety: every method may be called from any thread.
public final class Authenticator: Sendable {
    public static let prefix = "tbk_"

    private struct Entry: Sendable {
        let principal: Principal?
        let hash: [UInt8]
        let at: Date
    }

    private let store: any RegistryStore
    private let hasher: any SecretHasher
    private let maxAge: TimeInterval
    private let entries = Mutex<[String: Entry]>([:])
    private let used = Mutex<Set<String>>([])

    public init(store: any RegistryStore, hasher: any SecretHasher, maxAge: TimeInterval) {
        self.store = store
        self.hasher = hasher
        self.maxAge = maxAge
    }

    /// Makes a new key for `principal.id` from 32 random bytes; returns the key to show once and
    /// the hash to store.
    public static func newKey<R: RandomNumberGenerator>(id: String, hasher: any SecretHasher, using rng: inout R) -> (key: String, hash: [UInt8]) {
        let secret = Identifiers.token(bytes: 32, using: &rng)
        return (prefix + id + "_" + secret, hasher.hash(secret))
    }

    /// A fresh key id: 8 random bytes in hex.
    public static func newID<R: RandomNumberGenerator>(using rng: inout R) -> String {
        (0..<8).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &rng)) }.joined()
    }

    /// The principal holding the key in `authorization` (the whole header value), or
    /// `unauthorized` for a missing, malformed, unknown or revoked key — one answer for all,
    /// so that a caller learns nothing about which keys exist.
    public func authenticate(_ authorization: String?, now: Date) throws -> Principal {
        let refused = BrokerError.unauthorized("missing, malformed, unknown or revoked API key")
        guard let header = authorization, header.count > 7,
              header.prefix(7).lowercased() == "bearer " else { throw refused }
        let key = header.dropFirst(7)
        guard key.hasPrefix(Self.prefix) else { throw refused }
        let rest = key.dropFirst(Self.prefix.count)
        guard rest.utf8.count > 17 else { throw refused }
        let id = String(rest.prefix(16))
        let sep = rest.index(rest.startIndex, offsetBy: 16)
        guard rest[sep] == "_" else { throw refused }
        let secret = String(rest[rest.index(after: sep)...])

        let entry = try lookup(id, now: now)
        guard let principal = entry.principal, principal.revokedAt == nil,
              hasher.equal(hasher.hash(secret), entry.hash) else { throw refused }
        used.withLock { _ = $0.insert(id) }
        return principal
    }

    /// Key ids used since the last call (for last_used_at, written in bulk).
    public func drainUsed() -> [String] {
        used.withLock { u in
            defer { u.removeAll(keepingCapacity: true) }
            return Array(u)
        }
    }

    public func forget(_ change: Change) {
        switch change {
        case .apiKey(let id): _ = entries.withLock { $0.removeValue(forKey: id) }
        case .resync: entries.withLock { $0.removeAll() }
        default: break
        }
    }

    private func lookup(_ id: String, now: Date) throws -> Entry {
        if let e = entries.withLock({ $0[id] }), now.timeIntervalSince(e.at) < maxAge { return e }
        let found = try store.apiKey(id: id)
        // Unknown ids are cached too (with an empty hash that never matches), so that a flood
        // of made-up keys does not become a flood of queries.
        let e = Entry(principal: found?.0, hash: found?.secretHash ?? [], at: now)
        entries.withLock { m in
            if m.count > 100_000 { m.removeAll(keepingCapacity: true) }
            m[id] = e
        }
        return e
    }
}
