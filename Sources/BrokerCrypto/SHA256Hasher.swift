import BrokerCore
import COpenSSL

/// SHA256Hasher hashes bytes that arrive in pieces (FIPS 180-4), for bodies too large to hold
/// whole: `update` with each piece, then `finish` once. One OpenSSL digest context per hasher.
///
/// Thread-safety: none; one owner at a time.
public final class SHA256Hasher {
    private let ctx: OpaquePointer

    public init() throws(CryptoFailure) {
        let c = try OpenSSL.made(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
        guard let md = try? OpenSSL.sha256MD, EVP_DigestInit_ex(c, md, nil) == 1 else {
            EVP_MD_CTX_free(c)
            throw OpenSSL.failure("EVP_DigestInit_ex")
        }
        ctx = c
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public func update(_ bytes: UnsafeRawBufferPointer) throws(CryptoFailure) {
        guard bytes.count > 0 else { return }
        try OpenSSL.check(EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count), "EVP_DigestUpdate")
    }

    /// The digest of everything given to `update` (32 bytes); the hasher is spent.
    public func finish() throws(CryptoFailure) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        try OpenSSL.check(EVP_DigestFinal_ex(ctx, &out, &len), "EVP_DigestFinal_ex")
        return out
    }
}
