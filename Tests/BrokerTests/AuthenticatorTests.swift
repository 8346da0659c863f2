import Broker
import BrokerCore
import BrokerTesting
import Foundation
import Testing

@Suite("API keys (spec §6)")
struct AuthenticatorTests {
    let store = InMemoryRegistryStore()
    let hasher = PlainSecretHasher()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func makeKey(tenants: Set<String> = ["t1"]) throws -> (Authenticator, String, String) {
        var rng = SystemRandomNumberGenerator()
        let id = Authenticator.newID(using: &rng)
        let (key, hash) = Authenticator.newKey(id: id, hasher: hasher, using: &rng)
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
}
