import Foundation
import BrokerCore
import Synchronization

/// Authenticator turns an `Authorization: Bearer` header into a Principal.
///
/// Keys look like `tbk_<16 hex id>_<43 base64url secret>` (256 random bits). The id finds the
/// stored SHA-256 of the secret, and the hashes are compared in constant time, so that the
/// lookup leaks nothing about the secret. Principals are cached for `maxAge` and dropped at
/// once on revocation (change feed), in a bounded LRU; ids the store does not know are cached
/// apart, in a smaller LRU of their own, so that a flood of made-up keys costs one query per id
/// per `maxAge` and never pushes a real key out. `cached` answers from memory only, for HTTP
/// threads; a miss goes to `authenticate` on a worker thread.
///
/// Thread-safety: every method may be called from any thread.
public final class Authenticator: Sendable {
    public static let prefix = "tbk_"

    private final class Entry: Sendable {
        let principal: Principal?
        let hash: [UInt8]
        /// The secret before the last rotation, still accepted until its time.
        let previous: PreviousSecret?
        let at: Date
        /// The secret as presented when the entry was read from the store and matched its
        /// hash: a later request presenting the same bytes is compared with them (in constant
        /// time) instead of hashing again — SHA-256 through OpenSSL's EVP is most of a cached
        /// key check. The process already holds the keys that unseal every stored token, and
        /// the entry lives `maxAge` at most; a secret that differs is hashed as before.
        let verified: [UInt8]?
        /// Set on use, cleared when drained: last_used_at is written in bulk without a lock per request.
        let used = Atomic<Bool>(false)
        /// The second (since 1970) it was last moved up in the LRU order: at most once a second,
        /// so a request for a known key only reads the cache (`peek`) and never reorders it.
        let touched = Atomic<Int>(0)

        init(principal: Principal?, hash: [UInt8], previous: PreviousSecret? = nil, at: Date, verified: [UInt8]? = nil) {
            self.principal = principal
            self.hash = hash
            self.previous = previous
            self.at = at
            self.verified = verified
        }
    }

    private let store: any RegistryStore
    private let hasher: any SecretHasher
    private let configuredMaxAge: TimeInterval
    private let trust: CacheTrust
    /// The configured maximum age while the change feed is trusted, else 0 (CacheTrust).
    private var maxAge: TimeInterval { trust.maxAge(configuredMaxAge) }
    private let entries: ReadMostly<LRUCache<String, Entry>>
    private let unknown: Mutex<LRUCache<String, Date>>
    /// Principals of client certificates, by fingerprint (nil principal: it stands for none).
    private let certificates: ReadMostly<LRUCache<String, Entry>>
    /// Bumped by every `forget`: a store read that a change overtook is answered but not cached,
    /// so a notice that arrived before the read's result cannot be undone by it.
    private let generation = Atomic<Int>(0)
    /// Ids whose cache entry left memory (replaced, evicted, forgotten on a change notice) with a
    /// use not yet drained: the next drain still reports them. A key's own creation notice
    /// arriving after its first use must not erase that use.
    private let usedGone = Mutex<Set<String>>([])

    public init(store: any RegistryStore, hasher: any SecretHasher, maxAge: TimeInterval, capacity: Int = 100_000,
                unknownCapacity: Int = 10_000, trust: CacheTrust = CacheTrust()) {
        self.store = store
        self.hasher = hasher
        configuredMaxAge = maxAge
        self.trust = trust
        entries = ReadMostly(LRUCache(capacity: capacity))
        unknown = Mutex(LRUCache(capacity: unknownCapacity))
        certificates = ReadMostly(LRUCache(capacity: unknownCapacity))
    }

    static let unknownCertificate = BrokerError.unauthorized("the client certificate stands for no usable key")

    /// The principal a verified client certificate stands for (mTLS), from memory, or nil when
    /// only the store can tell.
    public func cached(certificate sha256: String, now: Date) -> Result<Principal, BrokerError>? {
        guard let e = Self.peek(certificates, sha256, now: now), now.timeIntervalSince(e.at) < maxAge else { return nil }
        return Result { () throws(BrokerError) in try check(certificate: e, now: now) }
    }

    /// The principal a verified client certificate stands for; `unauthorized` when none, or
    /// when it is revoked or expired. May query the store.
    public func authenticate(certificate sha256: String, now: Date) throws -> Principal {
        let before = generation.load(ordering: .acquiring)
        let e = Entry(principal: try store.apiKey(certificateSHA256: sha256), hash: [], at: now)
        let current = generation.load(ordering: .acquiring) == before
        if current { keepUse(certificates.write { $0.set(sha256, e) }?.value) }
        let principal = try check(certificate: e, now: now)
        if !current { keepUse(e) }   // not cached: its use would never be drained
        return principal
    }

    private func check(certificate e: Entry, now: Date) throws(BrokerError) -> Principal {
        guard let principal = e.principal, principal.isValid(at: now) else { throw Self.unknownCertificate }
        if !e.used.load(ordering: .relaxed) { e.used.store(true, ordering: .relaxed) }
        return principal
    }

    /// Makes a new key for `principal.id` from 32 random bytes; returns the key to show once and
    /// the hash to store.
    public static func newKey<R: RandomNumberGenerator>(id: String, hasher: any SecretHasher, using rng: inout R) throws -> (key: String, hash: [UInt8]) {
        let secret = Identifiers.token(bytes: 32, using: &rng)
        return (prefix + id + "_" + secret, try hasher.hash(secret))
    }

    /// A fresh key id: 8 random bytes in hex.
    public static func newID<R: RandomNumberGenerator>(using rng: inout R) -> String {
        (0..<8).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &rng)) }.joined()
    }

    static let refused = BrokerError.unauthorized("missing, malformed, unknown or revoked API key")

    /// The principal holding the key in `authorization` (the whole header value), or
    /// `unauthorized` for a missing, malformed, unknown or revoked key — one answer for all,
    /// so that a caller learns nothing about which keys exist. May query the store.
    public func authenticate(_ authorization: String?, now: Date) throws -> Principal {
        guard let parts = Self.parse(authorization) else { throw Self.refused }
        if let known = fromMemory(parts, now: now) { return try known.get() }
        let before = generation.load(ordering: .acquiring)
        let found = try store.apiKey(id: parts.id)
        let current = generation.load(ordering: .acquiring) == before
        guard let found else {
            if current { unknown.withLock { _ = $0.set(parts.id, now) } }
            throw Self.refused
        }
        let matches = hasher.equal(try hasher.hash(parts.secret), found.secretHash)
        let e = Entry(principal: found.0, hash: found.secretHash, previous: found.previous, at: now,
                      verified: matches ? Array(parts.secret.utf8) : nil)
        if current { keepUse(entries.write { $0.set(parts.id, e) }?.value) }
        let principal = try check(e, secret: parts.secret, now: now)
        if !current { keepUse(e) }   // not cached: its use would never be drained
        return principal
    }

    /// The answer from memory, or nil when only the store can tell (call `authenticate` where
    /// blocking is fine). Never blocks on I/O.
    public func cached(_ authorization: String?, now: Date) -> Result<Principal, BrokerError>? {
        guard let parts = Self.parse(authorization) else { return .failure(Self.refused) }
        return fromMemory(parts, now: now)
    }

    private func fromMemory(_ parts: (id: String, secret: String), now: Date) -> Result<Principal, BrokerError>? {
        if let e = Self.peek(entries, parts.id, now: now), now.timeIntervalSince(e.at) < maxAge {
            return Result { () throws(BrokerError) in try check(e, secret: parts.secret, now: now) }
        }
        if let at = unknown.withLock({ $0.get(parts.id) }), now.timeIntervalSince(at) < maxAge { return .failure(Self.refused) }
        return nil
    }

    /// The key's principal if the secret matches and the key is neither revoked nor expired.
    private func check(_ e: Entry, secret: String, now: Date) throws(BrokerError) -> Principal {
        guard let principal = e.principal, principal.isValid(at: now), principal.certificateSHA256 == nil else { throw Self.refused }
        if !(e.verified.map { Self.same(secret, $0) } ?? false) {
            let hash: [UInt8]
            do { hash = try hasher.hash(secret) } catch { throw .internalError }
            // The previous secret of a rotated key is accepted until its time (compared whatever
            // the current one says). The verified bytes above answer sooner, but only for the
            // secret that was presented and matched: timing tells a caller nothing they did not send.
            let previous = e.previous.map { hasher.equal(hash, $0.hash) && now < $0.until } ?? false
            guard hasher.equal(hash, e.hash) || previous else { throw Self.refused }
        }
        if !e.used.load(ordering: .relaxed) { e.used.store(true, ordering: .relaxed) }
        return principal
    }

    /// Whether `secret`'s bytes are `bytes`, in time that depends on the length only.
    static func same(_ secret: String, _ bytes: [UInt8]) -> Bool {
        var secret = secret
        return secret.withUTF8 { u in
            guard u.count == bytes.count else { return false }
            var difference: UInt8 = 0
            for i in 0..<u.count { difference |= u[i] ^ bytes[i] }
            return difference == 0
        }
    }

    private static let bearerPrefix = Array("bearer tbk_".utf8)

    /// `Bearer tbk_<16 hex>_<secret>`, read as bytes (the scheme is case-insensitive, RFC 7235 §2.1).
    static func parse(_ authorization: String?) -> (id: String, secret: String)? {
        guard var header = authorization else { return nil }
        return header.withUTF8 { u in
            let pre = bearerPrefix
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
    }

    /// Key ids used since the last call (for last_used_at, written in bulk).
    public func drainUsed() -> [String] {
        var ids = usedGone.withLock { s in defer { s.removeAll() }; return s }
        ids.formUnion(Self.drain(entries))
        ids.formUnion(Self.drain(certificates))
        return ids.sorted()
    }

    /// The entry under `key`, read alongside other threads; moved up in the LRU order (a write)
    /// at most once a second.
    private static func peek(_ cache: ReadMostly<LRUCache<String, Entry>>, _ key: String, now: Date) -> Entry? {
        guard let e = cache.read({ $0.peek(key) }) else { return nil }
        let second = Int(now.timeIntervalSince1970)
        if e.touched.load(ordering: .relaxed) != second, e.touched.exchange(second, ordering: .relaxed) != second {
            _ = cache.write { $0.get(key) }
        }
        return e
    }

    private static func drain(_ cache: ReadMostly<LRUCache<String, Entry>>) -> [String] {
        cache.read { m in m.entries.compactMap { _, e in e.used.exchange(false, ordering: .relaxed) ? e.principal?.id : nil } }
    }

    /// Keeps the undrained use of an entry that left a cache.
    private func keepUse(_ gone: Entry?) {
        guard let gone, gone.used.exchange(false, ordering: .relaxed), let id = gone.principal?.id else { return }
        usedGone.withLock { _ = $0.insert(id) }
    }

    /// Empties a cache, keeping its entries' undrained uses.
    private func clear(_ cache: ReadMostly<LRUCache<String, Entry>>) {
        let gone: [Entry] = cache.write { m in
            let all = m.entries.map(\.value)
            m.removeAll()
            return all
        }
        for e in gone { keepUse(e) }
    }

    public func forget(_ change: Change) {
        switch change {
        case .apiKey, .resync: generation.add(1, ordering: .acquiringAndReleasing)
        default: return
        }
        switch change {
        case .apiKey(let id):
            keepUse(entries.write { $0.remove(id) })
            unknown.withLock { _ = $0.remove(id) }
            clear(certificates)   // a key made or revoked: rare, and the cache is keyed by fingerprint
        case .resync:
            clear(entries)
            unknown.withLock { $0.removeAll() }
            clear(certificates)
        default: break
        }
    }
}
