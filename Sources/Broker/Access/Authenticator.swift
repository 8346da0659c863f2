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

    private final class Entry: Sendable {
        let principal: Principal?
        let hash: [UInt8]
        let at: Date
        /// Set on use, cleared when drained: last_used_at is written in bulk without a lock per request.
        let used = Atomic<Bool>(false)

        init(principal: Principal?, hash: [UInt8], at: Date) {
            self.principal = principal
            self.hash = hash
            self.at = at
        }
    }

    private let store: any RegistryStore
    private let hasher: any SecretHasher
    private let maxAge: TimeInterval
    private let entries = Mutex<[String: Entry]>([:])

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
        guard var header = authorization else { throw refused }
        // `Bearer tbk_<16 hex>_<secret>`, read as bytes (the scheme is case-insensitive, RFC 7235 §2.1).
        let parts: (id: String, secret: String)? = header.withUTF8 { u in
            let pre = Array("bearer tbk_".utf8)
            guard u.count > pre.count + 17 else { return nil }
            for i in 0..<7 where (u[i] | (i == 6 ? 0 : 0x20)) != pre[i] { return nil }
            for i in 7..<pre.count where u[i] != pre[i] { return nil }
            let idStart = pre.count, sep = idStart + 16
            for i in idStart..<sep {
                let c = u[i]
                guard (c >= 48 && c <= 57) || (c >= 97 && c <= 102) else { return nil }
            }
            guard u[sep] == UInt8(ascii: "_") else { return nil }
            return (String(decoding: UnsafeBufferPointer(rebasing: u[idStart..<sep]), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(rebasing: u[(sep + 1)...]), as: UTF8.self))
        }
        guard let parts else { throw refused }
        let entry = try lookup(parts.id, now: now)
        guard let principal = entry.principal, principal.revokedAt == nil,
              hasher.equal(hasher.hash(parts.secret), entry.hash) else { throw refused }
        if !entry.used.load(ordering: .relaxed) { entry.used.store(true, ordering: .relaxed) }
        return principal
    }

    /// Key ids used since the last call (for last_used_at, written in bulk).
    public func drainUsed() -> [String] {
        entries.withLock { m in m.compactMap { id, e in e.used.exchange(false, ordering: .relaxed) ? id : nil } }
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
