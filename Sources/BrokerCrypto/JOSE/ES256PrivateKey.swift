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
    public init() {
        let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil)!
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        precondition(EVP_PKEY_keygen_init(ctx) == 1
            && EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) == 1
            && EVP_PKEY_keygen(ctx, &key) == 1, "P-256 key generation failed")
        pkey = key!
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
    public var der: [UInt8] { PrivateKeyDER.encode(pkey) }

    /// The public key as a JWK (RFC 7518 §6.2.1).
    public func jwk(kid: String) -> JSONWebKey {
        let (x, y) = publicCoordinates
        return JSONWebKey(kty: "EC", kid: kid, alg: "ES256", crv: "P-256", x: x, y: y)
    }

    /// The public point as JWK coordinates (RFC 7518 §6.2.1): base64url `x` and `y`.
    public var publicCoordinates: (x: String, y: String) {
        var point = [UInt8](repeating: 0, count: 65)
        var len = 0
        precondition(EVP_PKEY_get_octet_string_param(pkey, "pub", &point, 65, &len) == 1 && len == 65)
        return (Base64URL.encode(point[1..<33]), Base64URL.encode(point[33..<65]))
    }

    /// A signing context of this key, ready for EVP_PKEY_sign (a SHA-256 digest in, DER out).
    private func newContext() -> OpaquePointer {
        let c = EVP_PKEY_CTX_new(pkey, nil)!
        precondition(EVP_PKEY_sign_init(c) == 1, "ES256 signing context failed")
        return c
    }

    /// The JWS signature of `message`: raw r || s, 64 bytes.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        let digest = message.withUnsafeBytes { OpenSSL.sha256($0) }
        let pooled = contexts.withLock { $0.popLast() }
        let ctx = pooled ?? Context(pointer: newContext())
        defer { contexts.withLock { $0.append(ctx) } }
        var der = [UInt8](repeating: 0, count: 80)
        var derLen = der.count
        precondition(EVP_PKEY_sign(ctx.pointer, &der, &derLen, digest, 32) == 1, "ES256 signing failed")
        let parsed = der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var q: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &q, derLen)
        }
        guard let sig = parsed else { preconditionFailure("ECDSA signature did not parse") }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        out.withUnsafeMutableBufferPointer { buf in
            _ = BN_bn2binpad(ECDSA_SIG_get0_r(sig), buf.baseAddress, 32)
            _ = BN_bn2binpad(ECDSA_SIG_get0_s(sig), buf.baseAddress! + 32, 32)
        }
        return out
    }
}
