import COpenSSL

/// OpenSSL owns the library's conventions for this target: return codes, the error queue, and
/// the few primitives every other file uses. Nothing from the error queue is ever shown to a
/// caller (it could describe key material); it is cleared and replaced by a generic reason.
enum OpenSSL {
    struct Failure: Error, CustomStringConvertible {
        let operation: String
        var description: String { "OpenSSL: \(operation) failed" }
    }

    /// Throws when an OpenSSL call returned anything but 1.
    static func check(_ rc: Int32, _ operation: String) throws {
        guard rc == 1 else {
            ERR_clear_error()
            throw Failure(operation: operation)
        }
    }

    static func randomBytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        precondition(RAND_bytes(&out, Int32(n)) == 1, "the system random source failed")
        return out
    }

    /// SHA-256 fetched once: with OpenSSL 3, passing EVP_sha256() makes every call fetch the
    /// implementation again under a global lock.
    nonisolated(unsafe) static let sha256MD: OpaquePointer = EVP_MD_fetch(nil, "SHA256", nil)!

    /// AES-256-GCM fetched once, for the same reason.
    nonisolated(unsafe) static let aes256gcm: OpaquePointer = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)!

    static func sha256(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        precondition(EVP_Digest(data.baseAddress, data.count, &out, &len, sha256MD, nil) == 1)
        return out
    }
}
