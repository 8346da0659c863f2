/// Identifiers makes the opaque, unguessable ids the broker hands out: 256 random bits,
/// base64url, with a short prefix that tells what they name.
public enum Identifiers {
    public static func session<R: RandomNumberGenerator>(using rng: inout R) -> String {
        "ses_" + token(bytes: 32, using: &rng)
    }

    /// `bytes` random bytes as unpadded base64url.
    public static func token<R: RandomNumberGenerator>(bytes: Int, using rng: inout R) -> String {
        var raw = [UInt8](repeating: 0, count: bytes)
        for i in raw.indices { raw[i] = UInt8.random(in: .min ... .max, using: &rng) }
        return Base64URL.encode(raw)
    }
}
