@testable import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Synchronization
import Testing

@Suite("API keys")
struct AuthenticatorTests {
    let store = InMemoryRegistryStore()
    let hasher = PlainSecretHasher()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func makeKey(tenants: Set<String> = ["t1"]) throws -> (Authenticator, String, String) {
        var rng = SystemRandomNumberGenerator()
        let id = Authenticator.newID(using: &rng)
        let (key, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
        try store.createAPIKey(Principal(id: id, name: "k", roles: [.worker], tenants: tenants), secretHash: hash, now: now)
        return (Authenticator(store: store, hasher: hasher, maxAge: 60), key, id)
    }

    @Test("a valid key yields its principal")
    func validKey() throws {
        let (auth, key, id) = try makeKey()
        #expect(try auth.authenticate("Bearer " + key, now: now).id == id)
        #expect(key.count == 4 + 16 + 1 + 43)
    }

    @Test("missing, malformed, unknown, wrong-secret and revoked keys are all the same 401")
    func refusedKeys() throws {
        let (auth, key, id) = try makeKey()
        let wrongSecret = String(key.dropLast()) + (key.last == "A" ? "B" : "A")
        for header in [nil, "", "Basic abc", "Bearer ", "Bearer tbk_", "Bearer tbk_0123456789abcdef_x", "Bearer " + wrongSecret, "Bearer tbk_zz"] {
            #expect(throws: BrokerError.unauthorized("missing, malformed, unknown or revoked API key")) {
                try auth.authenticate(header, now: now)
            }
        }
        _ = try store.revokeAPIKey(id: id, now: now)
        auth.forget(.apiKey(id: id))
        #expect(throws: BrokerError.self) { try auth.authenticate("Bearer " + key, now: now) }
    }

    @Test("a revoked key is refused after the cache age even without a change notice")
    func revocationReachesCacheByAge() throws {
        let (auth, key, id) = try makeKey()
        _ = try auth.authenticate("Bearer " + key, now: now)
        _ = try store.revokeAPIKey(id: id, now: now)
        #expect(throws: BrokerError.self) { try auth.authenticate("Bearer " + key, now: now + 61) }
    }

    @Test("memory answers known and made-up keys; only a key never seen is a miss for a worker thread")
    func cachedAnswersFromMemory() throws {
        let (auth, key, id) = try makeKey()
        #expect(auth.cached("Bearer " + key, now: now) == nil, "a key never seen needs the store")
        _ = try auth.authenticate("Bearer " + key, now: now)
        #expect(try auth.cached("Bearer " + key, now: now)?.get().id == id)
        let madeUp = "Bearer tbk_00000000000000ff_" + String(repeating: "A", count: 43)
        #expect(auth.cached(madeUp, now: now) == nil)
        #expect(throws: BrokerError.self) { try auth.authenticate(madeUp, now: now) }
        #expect(auth.cached(madeUp, now: now) == .failure(.unauthorized("missing, malformed, unknown or revoked API key")),
                "an unknown id is remembered as unknown")
        #expect(auth.cached("Basic x", now: now) != nil, "a malformed header never needs the store")
    }

    @Test("a flood of made-up key ids never pushes a real key out of memory")
    func floodKeepsRealKeys() throws {
        var rng = SystemRandomNumberGenerator()
        let id = Authenticator.newID(using: &rng)
        let (key, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
        try store.createAPIKey(Principal(id: id, name: "k", roles: [.worker], tenants: ["t1"]), secretHash: hash, now: now)
        let auth = Authenticator(store: store, hasher: hasher, maxAge: 60, capacity: 10, unknownCapacity: 100)
        _ = try auth.authenticate("Bearer " + key, now: now)
        for i in 0..<5_000 {
            let fake = "Bearer tbk_" + String(format: "%016x", 1_000_000 + i) + "_" + String(repeating: "A", count: 43)
            _ = try? auth.authenticate(fake, now: now)
        }
        #expect(try auth.cached("Bearer " + key, now: now)?.get().id == id)
    }

    @Test("a use is drained once even when its entry left memory first (a late change notice, an eviction, a resync, a re-read) or never entered it (a notice during the read)")
    func usesSurviveTheCache() throws {
        var rng = SystemRandomNumberGenerator()
        var keys: [(id: String, key: String)] = []
        for _ in 0..<3 {
            let id = Authenticator.newID(using: &rng)
            let (key, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
            try store.createAPIKey(Principal(id: id, name: "k", roles: [.worker], tenants: ["t1"]), secretHash: hash, now: now)
            keys.append((id, key))
        }
        let auth = Authenticator(store: store, hasher: hasher, maxAge: 60, capacity: 2)
        _ = try auth.authenticate("Bearer " + keys[0].key, now: now)
        auth.forget(.apiKey(id: keys[0].id))   // the key's creation notice, arriving after its first use
        #expect(auth.drainUsed() == [keys[0].id])
        _ = try auth.authenticate("Bearer " + keys[0].key, now: now)
        _ = try auth.authenticate("Bearer " + keys[1].key, now: now)
        _ = try auth.authenticate("Bearer " + keys[2].key, now: now)   // evicts keys[0], used and not drained
        #expect(auth.drainUsed() == keys.map(\.id).sorted())
        #expect(auth.drainUsed().isEmpty, "each use is reported once")
        _ = try auth.authenticate("Bearer " + keys[2].key, now: now)
        auth.forget(.resync)
        #expect(auth.drainUsed() == [keys[2].id])
        // Used, then revoked without a notice: the re-read past maxAge refuses it and replaces the
        // entry, whose use is still reported.
        _ = try auth.authenticate("Bearer " + keys[2].key, now: now)
        _ = try store.revokeAPIKey(id: keys[2].id, now: now)
        #expect(throws: BrokerError.self) { try auth.authenticate("Bearer " + keys[2].key, now: now.addingTimeInterval(61)) }
        #expect(auth.drainUsed() == [keys[2].id])
        // A change notice during the store read: the answer is not cached, its use still counts.
        store.onKeyRead { _ in auth.forget(.apiKey(id: "0000000000000000")) }
        _ = try auth.authenticate("Bearer " + keys[1].key, now: now.addingTimeInterval(200))
        store.onKeyRead(nil)
        #expect(auth.drainUsed() == [keys[1].id])
    }

    /// Counts the hashes it computes (the cost the verified bytes spare a cached key).
    final class CountingHasher: SecretHasher, @unchecked Sendable {
        let plain = PlainSecretHasher()
        let hashes = Mutex(0)
        func hash(_ secret: String) -> [UInt8] { hashes.withLock { $0 += 1 }; return plain.hash(secret) }
        func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool { plain.equal(a, b) }
    }

    @Test("a key read from the store is checked against the bytes that matched: no hash per request; another secret for the same id is hashed and refused")
    func verifiedBytesSpareTheHash() throws {
        let counting = CountingHasher()
        var rng = SystemRandomNumberGenerator()
        let id = Authenticator.newID(using: &rng)
        let (key, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
        try store.createAPIKey(Principal(id: id, name: "k", roles: [.worker], tenants: ["t1"]), secretHash: hash, now: now)
        let auth = Authenticator(store: store, hasher: counting, maxAge: 60)
        #expect(try auth.authenticate("Bearer " + key, now: now).id == id)
        let read = counting.hashes.withLock { $0 }
        for _ in 0..<10 { #expect(try auth.cached("Bearer " + key, now: now)?.get().id == id) }
        #expect(counting.hashes.withLock { $0 } == read, "a cached key's own secret is compared, not hashed")
        let wrong = String(key.dropLast()) + (key.last == "A" ? "B" : "A")
        #expect(auth.cached("Bearer " + wrong, now: now) == .failure(.unauthorized("missing, malformed, unknown or revoked API key")))
        #expect(counting.hashes.withLock { $0 } == read + 1, "another secret is hashed as before")
        #expect(try auth.cached("Bearer " + key, now: now)?.get().id == id)
        #expect(!Authenticator.same(String(key.dropLast()), Array(key.utf8)), "a shorter secret is not the same")
    }

    @Test("a rotated key: the new secret works at once, the old one until the overlap ends, then only the new")
    func rotation() throws {
        let (auth, old, id) = try makeKey()
        #expect(try auth.authenticate("Bearer " + old, now: now).id == id)
        var rng = SystemRandomNumberGenerator()
        let (new, hash) = try Authenticator.newKey(id: id, hasher: hasher, using: &rng)
        #expect(try store.rotateAPIKey(id: id, secretHash: hash, previousUntil: now.addingTimeInterval(30), unlessOverlappingAt: now))
        auth.forget(.apiKey(id: id))
        #expect(try auth.authenticate("Bearer " + new, now: now).id == id)
        #expect(try auth.authenticate("Bearer " + old, now: now.addingTimeInterval(29)).id == id)
        #expect(throws: BrokerError.self) { try auth.authenticate("Bearer " + old, now: now.addingTimeInterval(30)) }
        #expect(try auth.authenticate("Bearer " + new, now: now.addingTimeInterval(31)).id == id)
    }
}

@Suite("LRU cache")
struct LRUCacheTests {
    @Test("evicts the least recently used; a read counts as a use; removed slots are reused")
    func evictsLeastRecentlyUsed() {
        var c = LRUCache<Int, String>(capacity: 3)
        c.set(1, "a"); c.set(2, "b"); c.set(3, "c")
        #expect(c.get(1) == "a")
        #expect(c.set(4, "d").map { "\($0.key)\($0.value)" } == "2b")   // the evicted value comes back
        #expect(c.get(2) == nil && c.get(1) == "a" && c.get(3) == "c" && c.get(4) == "d")
        #expect(c.remove(3) == "c" && c.remove(3) == nil)
        #expect(c.set(5, "e") == nil)
        #expect(c.count == 3 && c.get(1) == "a" && c.get(4) == "d" && c.get(5) == "e")
        #expect(c.set(1, "a2").map { "\($0.key)\($0.value)" } == "1a")   // so does a replaced one
        c.set(6, "f")
        #expect(c.get(4) == nil && c.get(1) == "a2" && c.get(5) == "e" && c.get(6) == "f")
        c.removeAll()
        #expect(c.count == 0 && c.get(1) == nil)
        c.set(7, "g")
        #expect(c.get(7) == "g")
    }
}
