import BrokerCore
import COpenSSL

/// SHA256 hashes bytes and strings (FIPS 180-4) through OpenSSL; throws CryptoFailure when
/// OpenSSL fails.
public enum SHA256 {
    public static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        try bytes.withUnsafeBytes { b throws(CryptoFailure) in try OpenSSL.sha256(b) }
    }
    public static func hash(_ s: String) throws -> [UInt8] {
        var s = s
        return try s.withUTF8 { u throws(CryptoFailure) in try OpenSSL.sha256(UnsafeRawBufferPointer(u)) }
    }
}
