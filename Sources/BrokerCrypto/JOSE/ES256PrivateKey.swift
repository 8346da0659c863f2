import BrokerCore
import COpenSSL

/// ES256PrivateKey is an ECDSA P-256 key that signs JWS values (RFC 7518 §3.4): the signature
/// is the raw `r || s` (64 bytes) JOSE expects, converted from OpenSSL's DER.
///
/// Thread-safety: the key is read-only; each signature takes a signing context of its own from
/// a small pool. The contexts are prepared once (EVP_PKEY_sign_init) and reused: OpenSSL 3's
/// per-call EVP_DigestSignInit fetched the algorithms again and cost more than the signature.
public final class ES256PrivateKey: @unchecked Sendable {
    private let pkey: OpaquePointer
    /// A prepared EVP_PKEY_CTX; used by one thread at a time (the pool hands it out).
    private struct Context: @unchecked Sendable { let pointer: OpaquePointer }
    /// A PlainMutex, not a Mutex: every proof takes it twice, on every HTTP thread (see PlainMutex).
    private let contexts = PlainMutex<[Context]>([])

    /// A new random key.
    public init() throws(CryptoFailure) {
        let ctx = try OpenSSL.made(EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil), "EVP_PKEY_CTX_new_id")
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        try OpenSSL.check(EVP_PKEY_keygen_init(ctx), "EVP_PKEY_keygen_init")
        try OpenSSL.check(EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1), "EVP_PKEY_CTX_set_ec_paramgen_curve_nid")
        try OpenSSL.check(EVP_PKEY_keygen(ctx, &key), "EVP_PKEY_keygen")
        pkey = try OpenSSL.made(key, "EVP_PKEY_keygen")
    }

    /// A key stored before with `der` (SEC 1 ECPrivateKey DER); nil when it is not one.
    public init?(der: [UInt8]) {
        guard let k = PrivateKeyDER.decode(der, type: EVP_PKEY_EC) else { return nil }
        pkey = k
    }

    deinit {
        for c in contexts.withLock({ $0 }) { EVP_PKEY_CTX_free(c.pointer) }
        EVP_PKEY_free(pkey)
    }

    /// The private key as DER, to be sealed at rest.
    public var der: [UInt8] { get throws(CryptoFailure) { try PrivateKeyDER.encode(pkey) } }

    /// The public key as a JWK (RFC 7518 §6.2.1).
    public func jwk(kid: String) throws(CryptoFailure) -> JSONWebKey {
        let (x, y) = try publicCoordinates
        return JSONWebKey(kty: "EC", kid: kid, alg: "ES256", crv: "P-256", x: x, y: y)
    }

    /// The public point as JWK coordinates (RFC 7518 §6.2.1): base64url `x` and `y`.
    public var publicCoordinates: (x: String, y: String) {
        get throws(CryptoFailure) {
            var point = [UInt8](repeating: 0, count: 65)
            var len = 0
            guard EVP_PKEY_get_octet_string_param(pkey, "pub", &point, 65, &len) == 1, len == 65 else {
                throw OpenSSL.failure("EVP_PKEY_get_octet_string_param")
            }
            return (Base64URL.encode(point[1..<33]), Base64URL.encode(point[33..<65]))
        }
    }

    /// A signing context of this key, ready for EVP_PKEY_sign (a SHA-256 digest in, DER out).
    private func newContext() throws(CryptoFailure) -> OpaquePointer {
        let c = try OpenSSL.made(EVP_PKEY_CTX_new(pkey, nil), "EVP_PKEY_CTX_new")
        guard EVP_PKEY_sign_init(c) == 1 else {
            EVP_PKEY_CTX_free(c)
            throw OpenSSL.failure("EVP_PKEY_sign_init")
        }
        return c
    }

    /// The JWS signature of `message`: raw r || s, 64 bytes.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        let digest = try message.withUnsafeBytes { b throws(CryptoFailure) in try OpenSSL.sha256(b) }
        let pooled = contexts.withLock { $0.popLast() }
        let ctx = try pooled ?? Context(pointer: newContext())
        defer { contexts.withLock { $0.append(ctx) } }
        var der = [UInt8](repeating: 0, count: 80)
        var derLen = der.count
        try OpenSSL.check(EVP_PKEY_sign(ctx.pointer, &der, &derLen, digest, 32), "EVP_PKEY_sign")
        let parsed = der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var q: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &q, derLen)
        }
        guard let sig = parsed else { throw OpenSSL.failure("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        out.withUnsafeMutableBufferPointer { buf in
            _ = BN_bn2binpad(ECDSA_SIG_get0_r(sig), buf.baseAddress, 32)
            _ = BN_bn2binpad(ECDSA_SIG_get0_s(sig), buf.baseAddress! + 32, 32)
        }
        return out
    }
}
