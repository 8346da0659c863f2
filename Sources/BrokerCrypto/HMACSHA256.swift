import BrokerCore
import COpenSSL

/// HMACSHA256 computes HMAC-SHA-256 (RFC 2104). The broker never accepts HS* tokens; the
/// development IdP uses this to forge one, so that the test proving they are refused can fail.
public enum HMACSHA256 {
    public static func mac(key: [UInt8], _ data: [UInt8]) throws(CryptoFailure) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        _ = try OpenSSL.made(HMAC(OpenSSL.sha256MD, key, Int32(key.count), data, data.count, &out, &len), "HMAC")
        return out
    }
}
