/// ClientServability says why the broker cannot serve a client at an issuer, from what the
/// issuer's discovery document advertises — at registration, not after a user consented. Only
/// what is advertised is held against the client: an absent list says nothing.
public enum ClientServability {
    /// The ID-token algorithms the broker verifies.
    public static let idTokenAlgorithms: Set<String> = ["ES256", "RS256", "PS256"]

    /// Each reason the client cannot be served; empty when it can.
    public static func problems(_ c: ClientRegistration, _ m: IssuerMetadata) -> [String] {
        var out: [String] = []
        if let algs = m.idTokenSigningAlgorithms, idTokenAlgorithms.isDisjoint(with: algs) {
            out.append("the issuer signs ID tokens only with \(algs.joined(separator: ", ")); the broker verifies ES256, RS256 and PS256")
        }
        if let methods = m.tokenEndpointAuthMethods, !methods.contains(c.authMethod.rawValue) {
            out.append("the issuer does not accept auth_method \(c.authMethod.rawValue) (it lists \(methods.joined(separator: ", ")))")
        }
        if c.authMethod == .privateKeyJWT, let algs = m.tokenEndpointAuthSigningAlgorithms,
           !algs.contains((c.assertionAlgorithm ?? .es256).rawValue) {
            out.append("the issuer does not accept \((c.assertionAlgorithm ?? .es256).rawValue) client assertions (it lists \(algs.joined(separator: ", "))): set assertion_alg")
        }
        if let alg = c.dpopAlgorithm, let algs = m.dpopSigningAlgorithms, !algs.contains(alg.rawValue) {
            out.append("the issuer does not accept \(alg.rawValue) DPoP proofs (it lists \(algs.joined(separator: ", "))): set dpop_alg")
        }
        if c.profile == .fapi2 { out += FAPI2Profile.issuerProblems(m) }
        if m.requirePushedAuthorizationRequests, m.pushedAuthorizationRequestEndpoint == nil {
            out.append("the issuer requires pushed authorization requests but advertises no pushed_authorization_request_endpoint")
        }
        return out
    }
}
