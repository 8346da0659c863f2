import BrokerCore
import Foundation
import Synchronization

/// ActorTokens signs the actor tokens of delegated exchanges (RFC 8693 §4.1): a JWT naming the
/// calling worker principal (`sub` its id, `iss` the broker, `aud` the IdP's issuer, one minute,
/// a fresh `jti`), signed with the broker's current key, which every replica shares through the
/// store and `/.well-known/jwks.json` publishes.
public final class ActorTokens: Sendable {
    let store: any BrokerKeyStore
    let keys: any PrivateKeys
    let digest: any Digest
    let clock: any Clock
    /// The broker's issuer identifier (TOKENBROKER_ISSUER): `iss` of its tokens, and where its JWKS is.
    public let issuer: String
    private let current = Mutex<(kid: String, signer: any JWSSigner)?>(nil)
    private let published = Mutex<(keys: [JSONWebKey], at: Date)?>(nil)

    public init(store: any BrokerKeyStore, keys: any PrivateKeys, digest: any Digest, clock: any Clock, issuer: String) {
        self.store = store
        self.keys = keys
        self.digest = digest
        self.clock = clock
        self.issuer = issuer
    }

    /// An actor token for `principal`, for the IdP `audience`.
    func token(for principal: Principal, audience: String) throws -> String {
        let (kid, signer) = try currentKey()
        let t = Int(clock.now().timeIntervalSince1970)
        var rng = SystemRandomNumberGenerator()
        return try CompactJWS.make(header: ["alg": signer.algorithm.rawValue, "kid": kid, "typ": "JWT"],
                               claims: ["iss": issuer, "sub": principal.id, "aud": audience, "iat": t, "exp": t + 60,
                                        "jti": Identifiers.token(bytes: 16, using: &rng)], sign: signer.sign)
    }

    /// Every key's public half, named by its kid (kept a minute: the route is public). The
    /// current key is made first if there is none, so that an IdP can register the set before
    /// the first exchange.
    public func jwks() throws -> [JSONWebKey] {
        _ = try currentKey()
        let now = clock.now()
        if let p = published.withLock({ $0 }), now.timeIntervalSince(p.at) < 60 { return p.keys }
        let out = try store.keys().compactMap { k in try keys.publicKey(der: k.der, alg: k.algorithm).map { $0.named(k.kid) } }
        published.withLock { $0 = (out, now) }
        return out
    }

    /// The current key, loaded once; made (ES256) when the store has none.
    private func currentKey() throws -> (String, any JWSSigner) {
        if let c = current.withLock({ $0 }) { return c }
        var key = try store.keys().first
        if key == nil {
            let der = try keys.generate(.es256)
            guard let pub = try keys.publicKey(der: der, alg: .es256) else { throw BrokerError.internalError }
            key = try store.addCurrent(BrokerKey(kid: Base64URL.encode(digest.sha256(pub.thumbprintInput)), algorithm: .es256, der: der,
                                                 createdAt: clock.now()))
            published.withLock { $0 = nil }
        }
        guard let k = key, let signer = keys.signer(der: k.der, alg: k.algorithm) else { throw BrokerError.internalError }
        current.withLock { $0 = (k.kid, signer) }
        return (k.kid, signer)
    }
}
