import BrokerHTTP

/// A personality's metadata: RFC 8414 (at `/.well-known/oauth-authorization-server` inserted
/// before `/p/<name>`, §3.1) or OpenID Connect Discovery (at the issuer). Microsoft's
/// multi-tenant discovery, at a tenant such as `common`, names its issuer with the literal
/// `{tenantid}`, as Microsoft's does; at a tenant's own id, that tenant's issuer.
extension DevIdP {
    func metadata(_ p: Personality, _ req: HTTPRequest) -> HTTPResponse {
        let root = issuer(for: req), base = root + "/p/" + p.name
        let pathTenant = req.parameters["tenant"]
        if case .single(let t) = p.tenancy, pathTenant != t { return json(404, ["error": "not_found"]) }
        let named = ["common", "organizations", "consumers"].contains(pathTenant ?? "")
        let issuer = p.issuer(root: root, tenant: named ? nil : pathTenant)
        func endpoint(_ path: String) -> String { base + path.replacingOccurrences(of: "{tenant}", with: pathTenant ?? "") }
        var d: [String: Any] = [
            "issuer": issuer,
            "authorization_endpoint": endpoint(p.paths.authorize),
            "token_endpoint": endpoint(p.paths.token),
            "response_types_supported": ["code"],
            "grant_types_supported": p.refresh == .none ? ["authorization_code"] : ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": (p.clientAuth.contains(.basic) ? ["client_secret_basic"] : [])
                + (p.clientAuth.contains(.body) ? ["client_secret_post"] : []),
        ]
        if p.pkce != .ignored { d["code_challenge_methods_supported"] = ["S256"] }
        if case .rfc7009(let path, _) = p.revocation { d["revocation_endpoint"] = endpoint(path) }
        if case .openid = p.metadata {
            d["jwks_uri"] = root + "/jwks"
            d["subject_types_supported"] = ["public"]
            d["id_token_signing_alg_values_supported"] = ["RS256"]
            d["scopes_supported"] = ["openid", "profile", "email", "offline_access"]
            if case .userinfo(let path) = p.whoAmI { d["userinfo_endpoint"] = endpoint(path) }
            if p.hasTenants { d["claims_supported"] = ["sub", "iss", "aud", "exp", "iat", "nonce", "tid", "oid", "email"] }
        }
        return json(200, d)
    }
}
