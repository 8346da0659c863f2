/// JSONWebKey is one public signing key of a JWK Set (RFC 7517 §4), reduced to the members a
/// verifier needs. Keys the broker cannot use (other types or curves, encryption keys, missing
/// members) are not representable: `init?(json:)` answers nil and the key set skips them, so an
/// IdP publishing a new key type does not break verification with the keys we know.
public struct JSONWebKey: Sendable, Hashable {
    public let kty: String
    public let kid: String?
    /// The algorithm the key is restricted to (RFC 7517 §4.4), if the IdP said.
    public let alg: String?
    /// EC: curve and coordinates (RFC 7518 §6.2.1), base64url.
    public let crv: String?
    public let x: String?
    public let y: String?
    /// RSA: modulus and exponent (RFC 7518 §6.3.1), base64url.
    public let n: String?
    public let e: String?

    public init(kty: String, kid: String?, alg: String? = nil, crv: String? = nil, x: String? = nil, y: String? = nil,
                n: String? = nil, e: String? = nil) {
        self.kty = kty
        self.kid = kid
        self.alg = alg
        self.crv = crv
        self.x = x
        self.y = y
        self.n = n
        self.e = e
    }

    /// A usable public signing key from one member of a JWKS `keys` array, else nil.
    public init?(json o: [String: Any]) {
        guard let kty = o["kty"] as? String else { return nil }
        if let use = o["use"] as? String, use != "sig" { return nil }
        if let ops = o["key_ops"] as? [String], !ops.contains("verify") { return nil }
        let kid = o["kid"] as? String, alg = o["alg"] as? String
        switch kty {
        case "EC":
            guard o["crv"] as? String == "P-256", let x = o["x"] as? String, let y = o["y"] as? String else { return nil }
            self.init(kty: kty, kid: kid, alg: alg, crv: "P-256", x: x, y: y)
        case "RSA":
            guard let n = o["n"] as? String, let e = o["e"] as? String else { return nil }
            self.init(kty: kty, kid: kid, alg: alg, n: n, e: e)
        default:
            return nil
        }
    }

    /// Whether a signature made with `alg` may be checked with this key: the key type fits, and
    /// the key's own `alg`, when present, is the same.
    public func allows(_ alg: JWSAlgorithm) -> Bool {
        kty == alg.keyType && (self.alg == nil || self.alg == alg.rawValue)
    }

    /// The same key named `kid`.
    public func named(_ kid: String) -> JSONWebKey {
        JSONWebKey(kty: kty, kid: kid, alg: alg, crv: crv, x: x, y: y, n: n, e: e)
    }

    /// The input of the key's JWK thumbprint (RFC 7638 §3): its required members, sorted, as
    /// compact JSON. SHA-256 of it, base64url, is a kid that names the key and nothing else.
    public var thumbprintInput: [UInt8] {
        let members = kty == "EC" ? [("crv", crv ?? ""), ("kty", kty), ("x", x ?? ""), ("y", y ?? "")]
                                  : [("e", e ?? ""), ("kty", kty), ("n", n ?? "")]
        return Array(("{" + members.map { "\"\($0.0)\":\"\($0.1)\"" }.joined(separator: ",") + "}").utf8)
    }

    /// The public members as a JWK object (for publishing a key, e.g. a client's assertion key).
    public var members: [String: String] {
        var m = ["kty": kty]
        for (k, v) in [("kid", kid), ("alg", alg), ("crv", crv), ("x", x), ("y", y), ("n", n), ("e", e)] { if let v { m[k] = v } }
        m["use"] = "sig"
        return m
    }
}
