import BrokerCore
import COpenSSL
import Synchronization

/// OpenSSLSignatureVerifier verifies ES256, RS256 and PS256 JWS signatures (RFC 7518 §3.3–3.5).
/// Keys built from JWKs are kept (bounded), so a busy issuer's key is imported once.
///
/// Thread-safety: any thread; the cache is behind a lock, verification runs outside it.
public final class OpenSSLSignatureVerifier: SignatureVerifier {
    private let keys = Mutex<[JSONWebKey: PublicKey]>([:])
    private let capacity: Int

    public init(capacity: Int = 1024) { self.capacity = capacity }

    public func verify(_ alg: JWSAlgorithm, key jwk: JSONWebKey, input: [UInt8], signature: [UInt8]) -> Bool {
        guard jwk.allows(alg), let key = publicKey(jwk), key.isEC == (alg == .es256) else { return false }
        let sig: [UInt8]
        if alg == .es256 {
            guard signature.count == 64, let der = Self.der(rawECDSA: signature) else { return false }
            sig = der
        } else {
            sig = signature
        }
        guard let md = EVP_MD_CTX_new(), let sha256 = try? OpenSSL.sha256MD else { return false }
        defer { EVP_MD_CTX_free(md) }
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(md, &pctx, sha256, nil, key.pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        if alg == .ps256 {
            guard EVP_PKEY_CTX_set_rsa_padding(pctx, tb_RSA_PKCS1_PSS_PADDING) == 1,
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) == 1,
                  EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, sha256) == 1 else {
                ERR_clear_error()
                return false
            }
        }
        let rc = EVP_DigestVerify(md, sig, sig.count, input, input.count)
        if rc != 1 { ERR_clear_error() }
        return rc == 1
    }

    private func publicKey(_ jwk: JSONWebKey) -> PublicKey? {
        if let k = keys.withLock({ $0[jwk] }) { return k }
        guard let k = PublicKey.from(jwk) else { return nil }
        keys.withLock { m in
            if m.count >= capacity { m.removeAll() }
            m[jwk] = k
        }
        return k
    }

    /// JOSE's raw `r || s` as the DER ECDSA-Sig-Value OpenSSL verifies.
    static func der(rawECDSA raw: [UInt8]) -> [UInt8]? {
        guard let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else { BN_free(r); BN_free(s); return nil }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else { BN_free(r); BN_free(s); return nil }
        var out: UnsafeMutablePointer<UInt8>?
        let len = i2d_ECDSA_SIG(sig, &out)
        guard len > 0, let out else { return nil }
        defer { CRYPTO_free(out, #file, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(len)))
    }
}
