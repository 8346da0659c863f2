import BrokerCore
import COpenSSL

/// PrivateKeyDER moves private keys in and out of DER (the traditional per-type encodings of
/// i2d_PrivateKey), the form in which the broker seals its own keys.
enum PrivateKeyDER {
    static func encode(_ pkey: OpaquePointer) throws(CryptoFailure) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let len = i2d_PrivateKey(pkey, &out)
        guard len > 0, out != nil else { throw OpenSSL.failure("i2d_PrivateKey") }
        defer { CRYPTO_free(out, #file, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(len)))
    }

    static func decode(_ der: [UInt8], type: Int32) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let k = d2i_PrivateKey(type, nil, &p, buf.count) else {
                ERR_clear_error()
                return nil
            }
            return k
        }
    }
}
