import BrokerCore
import COpenSSL

/// PublicKey is an OpenSSL EVP_PKEY built from a JWK's public members (RFC 7518 §6.2.1 EC
/// P-256, §6.3.1 RSA). EC points are checked to lie on the curve by OpenSSL when imported; RSA
/// keys under 2048 bits are refused (RFC 7518 §3.3).
///
/// Thread-safety: immutable after creation; verification uses a fresh context per call.
final class PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    let isEC: Bool

    private init(_ pkey: OpaquePointer, isEC: Bool) {
        self.pkey = pkey
        self.isEC = isEC
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The key, or nil when its members are malformed or it is too weak.
    static func from(_ jwk: JSONWebKey) -> PublicKey? {
        switch jwk.kty {
        case "EC":
            guard jwk.crv == "P-256", let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode),
                  x.count == 32, y.count == 32 else { return nil }
            return ec(point: [0x04] + x + y).map { PublicKey($0, isEC: true) }
        case "RSA":
            guard let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode), !n.isEmpty, !e.isEmpty,
                  let k = rsa(n: n, e: e) else { return nil }
            guard EVP_PKEY_get_bits(k) >= 2048 else {
                EVP_PKEY_free(k)
                return nil
            }
            return PublicKey(k, isEC: false)
        default:
            return nil
        }
    }

    /// OSSL_PARAM_BLD keeps the pointers it is given — parameter names included — until the
    /// params are built, and the params keep them until EVP_PKEY_fromdata: the whole sequence
    /// stays inside the closures that keep those C strings and buffers alive.
    private static func ec(point: [UInt8]) -> OpaquePointer? {
        guard let bld = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(bld) }
        return "group".withCString { groupKey in "pub".withCString { pubKey in "prime256v1".withCString { group in
            point.withUnsafeBufferPointer { pt -> OpaquePointer? in
                guard OSSL_PARAM_BLD_push_utf8_string(bld, groupKey, group, 0) == 1,
                      OSSL_PARAM_BLD_push_octet_string(bld, pubKey, pt.baseAddress, pt.count) == 1 else { return nil }
                return fromData("EC", bld)
            }
        } } }
    }

    private static func rsa(n: [UInt8], e: [UInt8]) -> OpaquePointer? {
        guard let bld = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(bld) }
        let bn = BN_bin2bn(n, Int32(n.count), nil), be = BN_bin2bn(e, Int32(e.count), nil)
        defer { BN_free(bn); BN_free(be) }
        guard bn != nil, be != nil else { return nil }
        return "n".withCString { nKey in "e".withCString { eKey in
            guard OSSL_PARAM_BLD_push_BN(bld, nKey, bn) == 1, OSSL_PARAM_BLD_push_BN(bld, eKey, be) == 1 else { return nil }
            return fromData("RSA", bld)
        } }
    }

    private static func fromData(_ type: String, _ bld: OpaquePointer) -> OpaquePointer? {
        guard let params = OSSL_PARAM_BLD_to_param(bld) else { return nil }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, type, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &key, tb_EVP_PKEY_PUBLIC_KEY, params) == 1 else {
            ERR_clear_error()
            return nil
        }
        return key
    }
}
