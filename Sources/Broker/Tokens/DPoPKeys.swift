import BrokerCore
import Foundation

/// DPoPKeys makes the sessions' DPoP keys (RFC 9449) and proves with them: a key is loaded once
/// and kept (bounded), so that a worker's proof costs one signature, not a key parse. The keys
/// never leave the broker; only proofs do.
public final class DPoPKeys: Sendable {
    let keys: any PrivateKeys
    let digest: any Digest
    /// Read on every DPoP hand-out (the key's DER hashed under the lock): readers share it.
    private let loaded = ReadMostly<[[UInt8]: DPoPProof]>([:])
    private static let limit = 50_000

    public init(keys: any PrivateKeys, digest: any Digest) {
        self.keys = keys
        self.digest = digest
    }

    /// A new key for a session of a client that binds its tokens with `alg`.
    func make(_ alg: JWSAlgorithm) throws -> DPoPKeyMaterial { DPoPKeyMaterial(algorithm: alg, der: try keys.generate(alg)) }

    /// A proof per target for a hand-out of `token` (RFC 9449 §7), made with the session's key.
    /// A bearer token gets none: a proof would claim a binding the IdP never made.
    func proofs(_ targets: [DPoPTarget], token: String, type: TokenType, key: DPoPKeyMaterial?, now: Date) -> Result<[String], BrokerError> {
        guard type == .dpop, let key else {
            return .failure(.conflict(code: "not_dpop_bound", message: "the access token is a bearer token: it takes no DPoP proof"))
        }
        guard let prover = prover(key) else { return .failure(.internalError) }
        do {
            return .success(try targets.map { try prover.make(htm: $0.method, target: $0.uri, at: now, nonce: $0.nonce, accessToken: token) })
        } catch {
            return .failure(.internalError)
        }
    }

    /// The key ready to make proofs; nil when the material is not a key of its algorithm, or
    /// the cryptography library fails to derive its public half.
    func prover(_ m: DPoPKeyMaterial) -> DPoPProof? {
        if let p = loaded.read({ $0[m.der] }) { return p }
        guard let signer = keys.signer(der: m.der, alg: m.algorithm), let p = try? DPoPProof(key: signer, digest: digest) else { return nil }
        loaded.write { held in
            if held.count >= Self.limit { held.removeAll() }
            held[m.der] = p
        }
        return p
    }
}
