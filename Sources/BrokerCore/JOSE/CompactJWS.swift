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
        guard token.utf8.count <= maxBytes else { throw JOSEError("token larger than \(maxBytes) bytes") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw JOSEError("not a compact JWS (three dot-separated parts)") }
        guard let h = Base64URL.decode(String(parts[0])),
              let header = try? JSONSerialization.jsonObject(with: Data(h)) as? [String: Any] else {
            throw JOSEError("header is not base64url JSON")
        }
        guard let p = Base64URL.decode(String(parts[1])),
              let claims = try? JSONSerialization.jsonObject(with: Data(p)) as? [String: Any] else {
            throw JOSEError("payload is not a base64url JSON object")
        }
        guard let sig = Base64URL.decode(String(parts[2])) else { throw JOSEError("signature is not base64url") }
        guard let alg = header["alg"] as? String else { throw JOSEError("header has no alg") }
        guard header["crit"] == nil else { throw JOSEError("header has crit extensions") }
        return CompactJWS(algorithm: alg, kid: header["kid"] as? String, type: header["typ"] as? String, claims: claims,
                          signingInput: Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)), signature: sig)
    }

    /// Serializes and signs: `sign` gets the signing input and returns the JWS signature bytes.
    public static func make(header: [String: Any], claims: [String: Any], sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let h = Base64URL.encode(try! JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
        let p = Base64URL.encode(try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let input = h + "." + p
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }
}
