/// Identifiers makes the opaque, unguessable ids the broker hands out: 256 random bits,
/// base64url, with a short prefix that tells what they name.
public enum Identifiers {
    public static func session<R: RandomNumberGenerator>(using rng: inout R) -> String {
        "ses_" + token(bytes: 32, using: &rng)
    }

    /// `bytes` random bytes as unpadded base64url.
    public static func token<R: RandomNumberGenerator>(bytes: Int, using rng: inout R) -> String {
        // Eight bytes per draw: the system generator makes one getrandom call per draw, and a
        // byte per draw cost a worker's DPoP hand-out a tenth of its time in system calls.
        var raw = [UInt8](repeating: 0, count: bytes)
        var i = 0
        while i < bytes {
            var v = rng.next()
            for _ in 0..<min(8, bytes - i) {
                raw[i] = UInt8(truncatingIfNeeded: v)
                v >>= 8
                i += 1
            }
        }
        return Base64URL.encode(raw)
    }
}
