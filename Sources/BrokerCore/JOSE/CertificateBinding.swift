import Foundation

/// CertificateBinding reads which client certificate an access token is bound to (RFC 8705
/// §3.1: the `x5t#S256` member of its `cnf` claim, the base64url SHA-256 of the certificate's
/// DER), from a token that happens to be a JWT (RFC 9068), unverified: the broker is the
/// token's client, not its audience, and uses the value only to decide who may present the
/// token. An opaque token shows nothing and is taken as not bound (the broker does not
/// introspect each access token it receives).
public enum CertificateBinding {
    /// The thumbprint `token` is bound to, or nil (an opaque token, no `cnf`, no `x5t#S256`).
    public static func thumbprint(ofAccessToken token: String) -> String? {
        guard let payload = CompactJWS.unverifiedPayload(token),
              let claims = try? JSONDecoder().decode(Claims.self, from: Data(payload)) else { return nil }
        return claims.cnf?.x5t.flatMap { $0.isEmpty ? nil : $0 }
    }

    private struct Claims: Decodable {
        let cnf: Confirmation?
    }

    private struct Confirmation: Decodable {
        let x5t: String?

        enum CodingKeys: String, CodingKey { case x5t = "x5t#S256" }
    }
}
