import BrokerCore
import COpenSSL

/// ES256PrivateKey is an ECDSA P-256 key that signs JWS values (RFC 7518 §3.4): the signature
/// is the raw `r || s` (64 bytes) JOSE expects, converted from OpenSSL's DER.
///
/// Thread-safety: signing uses a fresh digest context per call; the key itself is read-only.
public final class ES256PrivateKey: @unchecked Sendable {
    private let pkey: OpaquePointer

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

    deinit { EVP_PKEY_free(pkey) }

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

    /// The JWS signature of `message`: raw r || s, 64 bytes.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        let md = EVP_MD_CTX_new()!
        defer { EVP_MD_CTX_free(md) }
        var der = [UInt8](repeating: 0, count: 80)
        var derLen = der.count
        precondition(EVP_DigestSignInit(md, nil, EVP_sha256(), nil, pkey) == 1
            && EVP_DigestSign(md, &der, &derLen, message, message.count) == 1, "ES256 signing failed")
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
