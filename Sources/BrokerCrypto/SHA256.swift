import COpenSSL

/// SHA256 hashes bytes and strings (FIPS 180-4) through OpenSSL.
public enum SHA256 {
    public static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { OpenSSL.sha256($0) } }
    public static func hash(_ s: String) -> [UInt8] {
        var s = s
        return s.withUTF8 { OpenSSL.sha256(UnsafeRawBufferPointer($0)) }
    }
}
