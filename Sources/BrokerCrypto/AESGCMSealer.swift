import BrokerCore
import COpenSSL

/// AESGCMSealer seals with AES-256-GCM (NIST SP 800-38D): a fresh 96-bit random nonce per value,
/// the caller's context (tenant, table, row, column) as additional authenticated data, and the
/// key id in the clear so that an older key still opens what it sealed.
///
/// Layout: `0x01 | len(kid) | kid | nonce(12) | ciphertext | tag(16)`.
/// Thread-safety: immutable; every call uses its own cipher context.
public struct AESGCMSealer: Sealer {
    private static let version: UInt8 = 1
    private let keys: SealingKeys

    public init(keys: SealingKeys) { self.keys = keys }

    public var sealingKeyID: String? { keys.currentID }

    public func seal(_ plaintext: String, context: String) throws -> [UInt8] {
        let kid = Array(keys.currentID.utf8)
        let key = keys.keys[keys.currentID]!
        let nonce = try OpenSSL.randomBytes(12)
        var out: [UInt8] = [Self.version, UInt8(kid.count)] + kid + nonce
        let pt = Array(plaintext.utf8)
        let aad = Array(context.utf8)
        var ct = [UInt8](repeating: 0, count: pt.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        let ctx = try OpenSSL.made(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(ctx) }
        var len: Int32 = 0
        var total = 0
        try OpenSSL.check(EVP_EncryptInit_ex(ctx, OpenSSL.aes256gcm, nil, key, nonce), "EVP_EncryptInit_ex")
        try OpenSSL.check(EVP_EncryptUpdate(ctx, nil, &len, aad, Int32(aad.count)), "EVP_EncryptUpdate")
        try ct.withUnsafeMutableBufferPointer { buf throws(CryptoFailure) in
            try OpenSSL.check(EVP_EncryptUpdate(ctx, buf.baseAddress, &len, pt, Int32(pt.count)), "EVP_EncryptUpdate")
            total = Int(len)
            try OpenSSL.check(EVP_EncryptFinal_ex(ctx, buf.baseAddress! + total, &len), "EVP_EncryptFinal_ex")
            total += Int(len)
        }
        try OpenSSL.check(EVP_CIPHER_CTX_ctrl(ctx, tb_EVP_CTRL_GCM_GET_TAG, 16, &tag), "EVP_CIPHER_CTX_ctrl")
        out += ct[0..<total]
        out += tag
        return out
    }

    public func open(_ sealed: [UInt8], context: String) throws -> String {
        let failed = SealError("sealed value does not open (tampered, moved, or unknown key)")
        guard sealed.count >= 2, sealed[0] == Self.version else { throw failed }
        let kidLen = Int(sealed[1])
        let nonceAt = 2 + kidLen, ctAt = nonceAt + 12
        guard sealed.count >= ctAt + 16, let kid = String(bytes: sealed[2..<nonceAt], encoding: .utf8) else { throw failed }
        guard let key = keys.keys[kid] else {
            throw SealError("sealed under key '\(kid)', which this keyring lacks", missingKey: kid)
        }
        let nonce = Array(sealed[nonceAt..<ctAt])
        let ct = Array(sealed[ctAt..<(sealed.count - 16)])
        var tag = Array(sealed[(sealed.count - 16)...])
        let aad = Array(context.utf8)
        var pt = [UInt8](repeating: 0, count: ct.count + 16)
        let ctx = try OpenSSL.made(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(ctx) }
        var len: Int32 = 0
        var total = 0
        guard try EVP_DecryptInit_ex(ctx, OpenSSL.aes256gcm, nil, key, nonce) == 1,
              EVP_DecryptUpdate(ctx, nil, &len, aad, Int32(aad.count)) == 1 else { throw failed }
        let ok = pt.withUnsafeMutableBufferPointer { buf -> Bool in
            guard EVP_DecryptUpdate(ctx, buf.baseAddress, &len, ct, Int32(ct.count)) == 1 else { return false }
            total = Int(len)
            guard EVP_CIPHER_CTX_ctrl(ctx, tb_EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1 else { return false }
            guard EVP_DecryptFinal_ex(ctx, buf.baseAddress! + total, &len) == 1 else { return false }
            total += Int(len)
            return true
        }
        guard ok, let s = String(bytes: pt[0..<total], encoding: .utf8) else {
            ERR_clear_error()
            throw failed
        }
        return s
    }
}
