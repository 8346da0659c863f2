import BrokerCore
import Synchronization

/// DPoPKeys makes the sessions' DPoP keys (RFC 9449) and proves with them: a key is loaded once
/// and kept (bounded), so that a worker's proof costs one signature, not a key parse. The keys
/// never leave the broker; only proofs do.
public final class DPoPKeys: Sendable {
    let keys: any PrivateKeys
    let digest: any Digest
    private let loaded = Mutex<[[UInt8]: DPoPProof]>([:])
    private static let limit = 50_000

    public init(keys: any PrivateKeys, digest: any Digest) {
        self.keys = keys
        self.digest = digest
    }

    /// A new key for a session of a client that binds its tokens with `alg`.
    func make(_ alg: JWSAlgorithm) -> DPoPKeyMaterial { DPoPKeyMaterial(algorithm: alg, der: keys.generate(alg)) }

    /// The key ready to make proofs; nil when the material is not a key of its algorithm.
    func prover(_ m: DPoPKeyMaterial) -> DPoPProof? {
        if let p = loaded.withLock({ $0[m.der] }) { return p }
        guard let signer = keys.signer(der: m.der, alg: m.algorithm) else { return nil }
        let p = DPoPProof(key: signer, digest: digest)
        loaded.withLock { held in
            if held.count >= Self.limit { held.removeAll() }
            held[m.der] = p
        }
        return p
    }
}
