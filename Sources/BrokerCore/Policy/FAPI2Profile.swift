/// FAPI2Profile is the checklist of the FAPI 2.0 Security Profile (Final, §5.3.2 and §5.4) that
/// a `profile: fapi2` client is held to, as the broker can enforce it as the client:
///
/// 1. Sender-constrained tokens: DPoP (RFC 9449) with ES256 or PS256 (certificate-bound tokens
///    are not yet handed out, so mTLS binding is not offered as the constraint).
/// 2. Confidential client authentication (§5.3.2.1): mutual TLS (`tls_client_auth`,
///    `self_signed_tls_client_auth`, RFC 8705 §2), or `private_key_jwt` with ES256 or PS256,
///    the assertion's `aud` the issuer identifier as a single string.
/// 3. Pushed authorization requests (RFC 9126): the issuer must advertise its endpoint; every
///    login pushes.
/// 4. PKCE with S256 (always, for every client).
/// 5. RFC 9207 `iss` in the authorization response: the issuer must advertise it, and a
///    callback without it is refused.
/// 6. Only PS256 and ES256 (§5.4.1; OpenSSL 3.0 here has Ed25519, but the broker verifies no
///    EdDSA): ID tokens signed otherwise are refused, and an issuer that advertises neither for
///    ID tokens cannot be registered.
/// 7. `nonce` and `state` at most 64 characters (the broker's are 43).
public enum FAPI2Profile {
    public static let algorithms: Set<JWSAlgorithm> = [.es256, .ps256]

    /// What the registration itself breaks, whatever the issuer says.
    public static func clientProblems(_ c: ClientRegistration) -> [String] {
        var out: [String] = []
        if c.authMethod.needsCertificate {
            // RFC 8705 §2: the certificate authenticates the client.
        } else if c.authMethod != .privateKeyJWT {
            out.append("FAPI 2.0 needs auth_method private_key_jwt, tls_client_auth or self_signed_tls_client_auth (\(c.authMethod.rawValue) is not a FAPI 2.0 client authentication)")
        } else if let alg = c.assertionAlgorithm, !algorithms.contains(alg) {
            out.append("FAPI 2.0 allows only ES256 and PS256 client assertions, not \(alg.rawValue)")
        }
        if let alg = c.dpopAlgorithm {
            if !algorithms.contains(alg) { out.append("FAPI 2.0 allows only ES256 and PS256 DPoP proofs, not \(alg.rawValue)") }
        } else {
            out.append("FAPI 2.0 needs sender-constrained tokens: set \"dpop\": true")
        }
        return out
    }

    /// What the issuer's metadata makes impossible for such a client.
    public static func issuerProblems(_ m: IssuerMetadata) -> [String] {
        var out: [String] = []
        if m.pushedAuthorizationRequestEndpoint == nil {
            out.append("FAPI 2.0 needs pushed authorization requests: the issuer advertises no pushed_authorization_request_endpoint")
        }
        if !m.issParameterSupported {
            out.append("FAPI 2.0 needs RFC 9207: the issuer does not advertise authorization_response_iss_parameter_supported")
        }
        if let algs = m.idTokenSigningAlgorithms, Set(algs).isDisjoint(with: algorithms.map(\.rawValue)) {
            out.append("FAPI 2.0 allows only PS256 and ES256 ID tokens, and the issuer signs with \(algs.joined(separator: ", "))")
        }
        return out
    }
}
