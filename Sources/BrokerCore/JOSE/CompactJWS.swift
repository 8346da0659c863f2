import Foundation

/// CompactJWS is a JWS in compact serialization (RFC 7515 §7.1) taken apart, before any check
/// of its signature: header, claims, the signing input and the signature bytes.
///
/// Parsing refuses what a relying party must never act on: a `crit` header (no extension is
/// understood, RFC 7515 §4.1.11), a payload that is not a JSON object, more than `maxBytes`.
/// Key-location headers (`jku`, `x5u`, `jwk`) are ignored: keys come from the issuer's JWKS only.
public struct CompactJWS {
    public let algorithm: String
    public let kid: String?
    public let type: String?
    public let claims: [String: Any]
    public let signingInput: [UInt8]
    public let signature: [UInt8]

    public static func parse(_ token: String, maxBytes: Int = 16 * 1024) throws(JOSEError) -> CompactJWS {
        var token = token
        return try token.withUTF8 { bytes in Result { () throws(JOSEError) in try parse(bytes, maxBytes: maxBytes) } }.get()
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxBytes: Int) throws(JOSEError) -> CompactJWS {
        guard bytes.count <= maxBytes else { throw JOSEError("token larger than \(maxBytes) bytes") }
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else { throw JOSEError("not a compact JWS (three dot-separated parts)") }
        let raw = UnsafeRawBufferPointer(bytes)
        func part(_ from: Int, _ to: Int) -> [UInt8]? { Base64URL.decode(UnsafeRawBufferPointer(rebasing: raw[from..<to])) }
        guard let h = part(0, dots[0]), let header = try? JSONSerialization.jsonObject(with: Data(h)) as? [String: Any] else {
            throw JOSEError("header is not base64url JSON")
        }
        guard let p = part(dots[0] + 1, dots[1]), let claims = try? JSONSerialization.jsonObject(with: Data(p)) as? [String: Any] else {
            throw JOSEError("payload is not a base64url JSON object")
        }
        guard let sig = part(dots[1] + 1, bytes.count) else { throw JOSEError("signature is not base64url") }
        guard let alg = header["alg"] as? String else { throw JOSEError("header has no alg") }
        guard header["crit"] == nil else { throw JOSEError("header has crit extensions") }
        return CompactJWS(algorithm: alg, kid: header["kid"] as? String, type: header["typ"] as? String, claims: claims,
                          signingInput: Array(bytes[..<dots[1]]), signature: sig)
    }

    /// The payload's bytes alone, with nothing else decoded or checked (header, signature): for
    /// a hint that can only make something safer, such as an access token's `exp` shortening
    /// its expiry (AccessTokenExpiry), never for a decision about trust. Nil when the token is
    /// not three dot-separated parts, larger than `maxBytes`, or its payload not base64url.
    public static func unverifiedPayload(_ token: String, maxBytes: Int = 16 * 1024) -> [UInt8]? {
        let utf8 = token.utf8
        guard utf8.count <= maxBytes, let first = utf8.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let rest = utf8[utf8.index(after: first)...]
        guard let second = rest.firstIndex(of: UInt8(ascii: ".")),
              !utf8[utf8.index(after: second)...].contains(UInt8(ascii: ".")) else { return nil }
        let payload = Array(utf8[utf8.index(after: first)..<second])
        return payload.withUnsafeBytes { Base64URL.decode($0) }
    }

    /// Serializes and signs: `sign` gets the signing input and returns the JWS signature bytes.
    /// Throws what `sign` throws, or JSONSerialization's error for a value JSON cannot hold.
    public static func make(header: [String: Any], claims: [String: Any], sign: ([UInt8]) throws -> [UInt8]) throws -> String {
        let h = Base64URL.encode(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
        let p = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let input = h + "." + p
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }
}
