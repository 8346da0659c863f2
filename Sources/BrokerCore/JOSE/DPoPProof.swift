import Foundation

/// DPoPProof makes DPoP proof JWTs (RFC 9449 §4.2) with one session's key: header `typ`
/// `dpop+jwt`, the algorithm, and the public key as `jwk` (its required members only, never a
/// private one); claims `jti` (fresh, 128 bits), `htm`, `htu` (without query and fragment),
/// `iat`, and, when given, the server's `nonce` (§8, §9) and `ath`, the hash of the access token
/// the proof goes with (§4.2, for a protected resource).
public struct DPoPProof: Sendable {
    public let key: any JWSSigner
    /// The key's JWK SHA-256 thumbprint (RFC 7638): the `jkt` the IdP binds tokens to (§6.1)
    /// and the `dpop_jkt` of an authorization request (§10).
    public let thumbprint: String
    /// The header, base64url-encoded once: it is the same for every proof of the key.
    private let header: String
    private let digest: any Digest

    /// Throws CryptoFailure when the key's public half or its digest cannot be computed.
    public init(key: any JWSSigner, digest: any Digest) throws {
        self.key = key
        self.digest = digest
        let jwk = try key.publicKey
        thumbprint = Base64URL.encode(try digest.sha256(jwk.thumbprintInput))
        let h: [String: Any] = ["typ": "dpop+jwt", "alg": key.algorithm.rawValue, "jwk": Self.publicMembers(jwk)]
        header = Base64URL.encode(try JSONSerialization.data(withJSONObject: h, options: [.sortedKeys]))
    }

    /// A proof for one request: `htu` is cut to its target URI without query and fragment.
    public func make(htm: String, htu: String, at now: Date, nonce: String? = nil, accessToken: String? = nil) throws -> String {
        try make(htm: htm, target: Self.targetURI(htu) ?? htu, at: now, nonce: nonce, accessToken: accessToken)
    }

    /// A proof for a request whose `htu` is already its target URI (a checked DPoPTarget's).
    public func make(htm: String, target: String, at now: Date, nonce: String?, accessToken: String?) throws -> String {
        var rng = SystemRandomNumberGenerator()
        // The claims are written here, not by JSONSerialization, which was half of a proof's cost.
        var claims = "{"
        if let accessToken { claims += "\"ath\":\"" + (try Self.accessTokenHash(accessToken, digest)) + "\"," }
        claims += "\"htm\":" + Self.quoted(htm) + ",\"htu\":" + Self.quoted(target)
            + ",\"iat\":" + String(Int(now.timeIntervalSince1970)) + ",\"jti\":\"" + Identifiers.token(bytes: 16, using: &rng) + "\""
        if let nonce { claims += ",\"nonce\":" + Self.quoted(nonce) }
        claims += "}"
        let input = header + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }

    /// A JSON string (RFC 8259 §7): quote, backslash and control characters escaped.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// `ath` (§4.2): base64url of the SHA-256 of the access token's ASCII.
    public static func accessTokenHash(_ token: String, _ digest: any Digest) throws -> String {
        Base64URL.encode(try digest.sha256(Array(token.utf8)))
    }

    /// The `htu` of a URL (§4.2, RFC 9110 §7.1): an absolute http or https URI without its query
    /// and fragment; nil when `url` is not one.
    public static func targetURI(_ url: String) -> String? {
        guard var c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = c.host, !host.isEmpty else { return nil }
        c.query = nil
        c.fragment = nil
        c.scheme = scheme
        c.host = host.lowercased()
        return c.string
    }

    /// The members of a public JWK that identify it (RFC 7638 §3.2): what the proof's `jwk` carries.
    static func publicMembers(_ k: JSONWebKey) -> [String: String] {
        k.kty == "EC" ? ["kty": k.kty, "crv": k.crv ?? "", "x": k.x ?? "", "y": k.y ?? ""] : ["kty": k.kty, "n": k.n ?? "", "e": k.e ?? ""]
    }
}
