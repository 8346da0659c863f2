import BrokerCore
import COpenSSL

/// RSAPrivateKey is a 2048-bit RSA key that signs JWS values RS256 (RSASSA-PKCS1-v1_5, RFC 7518
/// §3.3) or PS256 (RSASSA-PSS, SHA-256, MGF1 SHA-256, 32-byte salt, §3.5).
///
/// Thread-safety: signing uses a fresh digest context per call; the key itself is read-only.
public final class RSAPrivateKey: @unchecked Sendable {
    private let pkey: OpaquePointer

    /// A new random 2048-bit key.
    public init() throws(CryptoFailure) {
        let ctx = try OpenSSL.made(EVP_PKEY_CTX_new_from_name(nil, "RSA", nil), "EVP_PKEY_CTX_new_from_name")
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_keygen_init(ctx), "EVP_PKEY_keygen_init")
        try OpenSSL.check(EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 2048), "EVP_PKEY_CTX_set_rsa_keygen_bits")
        try OpenSSL.check(EVP_PKEY_generate(ctx, &key), "EVP_PKEY_generate")
        pkey = try OpenSSL.made(key, "EVP_PKEY_generate")
    }

    /// A key stored before with `der` (PKCS #1 RSAPrivateKey DER); nil when it is not one.
    public init?(der: [UInt8]) {
        guard let k = PrivateKeyDER.decode(der, type: EVP_PKEY_RSA) else { return nil }
        pkey = k
    }

    deinit { EVP_PKEY_free(pkey) }

    public var der: [UInt8] { get throws(CryptoFailure) { try PrivateKeyDER.encode(pkey) } }

    /// The public key as a JWK (RFC 7518 §6.3.1).
    public func jwk(kid: String, alg: JWSAlgorithm = .rs256) throws(CryptoFailure) -> JSONWebKey {
        JSONWebKey(kty: "RSA", kid: kid, alg: alg.rawValue, n: Base64URL.encode(try param("n")), e: Base64URL.encode(try param("e")))
    }

    private func param(_ name: String) throws(CryptoFailure) -> [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &bn) == 1, bn != nil else { throw OpenSSL.failure("EVP_PKEY_get_bn_param") }
        defer { BN_free(bn) }
        var out = [UInt8](repeating: 0, count: Int((BN_num_bits(bn) + 7) / 8))
        _ = BN_bn2bin(bn, &out)
        return out
    }

    /// The JWS signature of `message` with RS256 or PS256.
    public func sign(_ message: [UInt8], pss: Bool = false) throws(CryptoFailure) -> [UInt8] {
        let md = try OpenSSL.made(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        defer { EVP_MD_CTX_free(md) }
        var pctx: OpaquePointer?
        try OpenSSL.check(EVP_DigestSignInit(md, &pctx, OpenSSL.sha256MD, nil, pkey), "EVP_DigestSignInit")
        if pss {
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_padding(pctx, tb_RSA_PKCS1_PSS_PADDING), "EVP_PKEY_CTX_set_rsa_padding")
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32), "EVP_PKEY_CTX_set_rsa_pss_saltlen")
            try OpenSSL.check(EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, OpenSSL.sha256MD), "EVP_PKEY_CTX_set_rsa_mgf1_md")
        }
        var out = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(pkey)))
        var len = out.count
        try OpenSSL.check(EVP_DigestSign(md, &out, &len, message, message.count), "EVP_DigestSign")
        return Array(out[..<len])
    }
}
