/// DPoPKeyMaterial is a session's DPoP private key (RFC 9449 §2): made by the broker when the
/// login starts, kept for the whole life of the session (every proof of a session is made with
/// the same key, so the IdP's binding holds across refreshes), sealed at rest like tokens, and
/// never handed to anyone — workers get proofs, not the key.
public struct DPoPKeyMaterial: Sendable, Equatable {
    public let algorithm: JWSAlgorithm
    /// The private key as DER (SEC 1 for EC, PKCS #1 for RSA).
    public let der: [UInt8]

    public init(algorithm: JWSAlgorithm, der: [UInt8]) {
        self.algorithm = algorithm
        self.der = der
    }

    /// The form the store seals: `ALG:base64url(der)`.
    public var encoded: String { algorithm.rawValue + ":" + Base64URL.encode(der) }

    /// The key stored before as `encoded`; nil when it is not one.
    public init?(encoded: String) {
        guard let colon = encoded.firstIndex(of: ":"), let alg = JWSAlgorithm(rawValue: String(encoded[..<colon])),
              let der = Base64URL.decode(String(encoded[encoded.index(after: colon)...])), !der.isEmpty else { return nil }
        self.init(algorithm: alg, der: der)
    }
}
