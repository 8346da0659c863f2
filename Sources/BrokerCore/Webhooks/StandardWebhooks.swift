import Foundation

/// StandardWebhooks is the signing scheme of https://www.standardwebhooks.com: a delivery
/// carries `webhook-id` (the event's id, the same on every retry), `webhook-timestamp` (Unix
/// seconds of this attempt) and `webhook-signature`: `v1,<base64 HMAC-SHA256>` over
/// `<id>.<timestamp>.<body>`, keyed by the secret's bytes (`whsec_<base64>`), one signature per
/// secret in force, space-separated (a rotation's overlap). A receiver recomputes it with its
/// secret, compares in constant time, and refuses timestamps more than five minutes off.
public enum StandardWebhooks {
    public typealias MAC = @Sendable (_ key: [UInt8], _ message: [UInt8]) throws -> [UInt8]

    /// The key bytes of a `whsec_…` secret, or nil.
    public static func key(_ secret: String) -> [UInt8]? {
        guard secret.hasPrefix("whsec_"), let d = Data(base64Encoded: String(secret.dropFirst(6))), d.count >= 24 else { return nil }
        return Array(d)
    }

    /// A new secret of 32 random bytes.
    public static func newSecret(using rng: inout some RandomNumberGenerator) -> String {
        "whsec_" + Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &rng) }).base64EncodedString()
    }

    /// What is signed.
    public static func content(id: String, timestamp: Int, body: String) -> [UInt8] {
        Array("\(id).\(timestamp).\(body)".utf8)
    }

    /// The `webhook-signature` value: one `v1,` signature per secret. Throws what `mac` throws.
    public static func signature(id: String, timestamp: Int, body: String, secrets: [String], mac: MAC) throws -> String {
        let signed = content(id: id, timestamp: timestamp, body: body)
        return try secrets.compactMap(key).map { "v1," + Data(try mac($0, signed)).base64EncodedString() }.joined(separator: " ")
    }

    /// The documented check: true when one of `header`'s v1 signatures is the one `secret`
    /// makes, and the timestamp is within `tolerance` of `now`.
    public static func verify(id: String, timestamp: String, header: String, body: String, secret: String,
                              now: Date, tolerance: TimeInterval = 300, mac: MAC) -> Bool {
        guard let t = Int(timestamp), abs(now.timeIntervalSince1970 - Double(t)) <= tolerance, let k = key(secret),
              let m = try? mac(k, content(id: id, timestamp: t, body: body)) else { return false }
        let expected = Array(("v1," + Data(m).base64EncodedString()).utf8)
        return header.split(separator: " ").contains { candidate in
            let c = Array(candidate.utf8)
            return c.count == expected.count && zip(c, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0   // constant time
        }
    }
}
