import BrokerHTTP

/// `GET /p`: every personality with its endpoints as URLs, so that a test (or an engineer
/// writing a provider descriptor) finds them without reading the dev IdP. `{tenant}` is left
/// for the caller to fill in. `refresh`, `access_expires` and `access_ttl` (null: the client's or
/// the dev IdP's lifetime) are how the personality's grants live by default; `token_rotation`, where the provider makes rotation an app setting, how they
/// live for a client registered with it on.
extension DevIdP {
    func personalityIndex(_ req: HTTPRequest) -> HTTPResponse {
        let root = issuer(for: req)
        var all: [String: Any] = [:]
        for p in Personality.all {
            let base = root + "/p/" + p.name
            var o: [String: Any] = [
                "authorization_endpoint": base + p.paths.authorize, "token_endpoint": base + p.paths.token,
                "revocation_style": p.revocation.style,
                "revocation": p.revocationRoutes.map { ["method": $0.0, "url": base + $0.1] },
                "whoami": p.whoAmIRoutes.map { ["method": $0.0, "url": base + $0.1, "token_in": p.whoAmITokenIn] },
                "refresh": "\(p.refresh)", "access_expires": p.accessExpires, "access_ttl": p.accessTTL as Any, "sends_expires_in": p.sendsExpiresIn,
                "refresh_refusal": ["error": p.codes.refresh, "status": p.errors.inOK ? 200 : p.codes.refreshStatus], "oidc": p.oidc,
                "client_auth": [p.clientAuth.contains(.basic) ? "basic" : nil, p.clientAuth.contains(.body) ? "body" : nil].compactMap { $0 },
                "token_request": [p.tokenRequest.contains(.form) ? "form" : nil, p.tokenRequest.contains(.json) ? "json" : nil].compactMap { $0 },
            ]
            if let path = p.metadataPath { o["metadata"] = root + path }
            if case .hubspot = p.whoAmI, let (_, path) = p.whoAmIRoutes.first { o["introspection_endpoint"] = base + path }
            if p.oidc { o["issuer"] = base + p.paths.issuer }
            switch p.offline {
            case .param(let name, let value): o["offline_parameter"] = [name: value]
            case .scope(let s): o["offline_scope"] = s
            case .always, .never: break
            }
            if case .single(let t) = p.tenancy { o["tenant"] = t }
            if p.tokenRotation != nil {   // what a client registered with `token_rotation` gets instead
                let r = p.played(rotation: true)
                o["token_rotation"] = ["refresh": "\(r.refresh)", "access_ttl": r.accessTTL as Any, "access_expires": r.accessExpires]
            }
            all[p.name] = o
        }
        return json(200, all)
    }
}
