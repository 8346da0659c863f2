import BrokerCore
import COpenSSL

/// OpenSSL owns the library's conventions for this target: return codes, the error queue, and
/// the few primitives every other file uses. Nothing from the error queue is ever shown to a
/// caller (it could describe key material); it is cleared and replaced by CryptoFailure, which
/// names the call. No result of the library is a precondition: a failure fails the request that
/// met it, never the process.
enum OpenSSL {
    /// Throws CryptoFailure naming `operation` when an OpenSSL call returned anything but 1.
    static func check(_ rc: Int32, _ operation: String) throws(CryptoFailure) {
        guard rc == 1 else { throw failure(operation) }
    }

    /// What a failed `operation` throws; the error queue is cleared.
    static func failure(_ operation: String) -> CryptoFailure {
        ERR_clear_error()
        return CryptoFailure(operation)
    }

    /// A pointer an OpenSSL constructor returned, or CryptoFailure naming it when it gave none.
    static func made<T>(_ p: T?, _ operation: String) throws(CryptoFailure) -> T {
        guard let p else { throw failure(operation) }
        return p
    }

    static func randomBytes(_ n: Int) throws(CryptoFailure) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        try check(RAND_bytes(&out, Int32(n)), "RAND_bytes")
        return out
    }

    /// SHA-256 fetched once: with OpenSSL 3, passing EVP_sha256() makes every call fetch the
    /// implementation again under a global lock.
    private nonisolated(unsafe) static let fetchedSHA256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)
    static var sha256MD: OpaquePointer { get throws(CryptoFailure) { try made(fetchedSHA256, "EVP_MD_fetch") } }

    /// AES-256-GCM fetched once, for the same reason.
    private nonisolated(unsafe) static let fetchedAES256GCM: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)
    static var aes256gcm: OpaquePointer { get throws(CryptoFailure) { try made(fetchedAES256GCM, "EVP_CIPHER_fetch") } }

    static func sha256(_ data: UnsafeRawBufferPointer) throws(CryptoFailure) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        try check(EVP_Digest(data.baseAddress, data.count, &out, &len, sha256MD, nil), "EVP_Digest")
        return out
    }
}
