import BrokerCore
import Foundation
import Testing

/// Provider descriptors read from JSON: defaults, every refusal naming its member, and the
/// pieces they are made of (RFC 6901 pointers, RFC 7396 merge patches, RFC 8414 §3.1 locations).
@Suite("Provider descriptors")
struct ProviderDescriptorTests {
    func parse(_ text: String) throws(DescriptorError) -> ProviderDescriptor { try ProviderDescriptor(jsonText: text) }

    func refusal(_ text: String) -> DescriptorError? {
        do { _ = try parse(text); return nil } catch { return error }
    }

    @Test("an empty descriptor is an OpenID provider with every standard default")
    func defaults() throws {
        let d = try parse("{}")
        #expect(d.kind == .oidc && d.authorization.pkce && d.authorization.scopeSeparator == " " && d.authorization.scopeParam == "scope")
        #expect(d.tokenRequest.encoding == .form && d.tokenResponse.format == .auto && !d.tokenResponse.errorInOK)
        #expect(d.grant.refreshTokens == .rotating && d.grant.accessTokenExpires && d.grant.defaultExpiresIn == 300)
        #expect(d.subjectSource.from == .idToken && d.revocation.style == .rfc7009)
        #expect(d.refusals.clientRefused == ["invalid_client", "unauthorized_client"] && d.refusals.retried == ["invalid_request"])
        #expect(try parse(#"{"protocol": "oauth2"}"#).subjectSource.from == .userinfo)
        // A subject without `from` is the protocol's default, with the pointer given.
        let who = try parse(#"{"protocol": "oauth2", "subject": {"url": "https://api.example/me", "pointer": "/id"}}"#).subjectSource
        #expect(who.from == .userinfo && who.url == "https://api.example/me" && who.pointer.description == "/id")
    }

    @Test("a full OAuth 2.0 descriptor reads back every member, and its JSON is canonical")
    func full() throws {
        let d = try parse("""
            {"protocol": "oauth2", "title": "Chat", "endpoints": {"authorization": "https://chat.example/oauth/authorize",
              "token": "https://chat.example/api/oauth.v2.access"},
             "authorization": {"params": {"prompt": "consent", "access_type": "offline"}, "pkce": false, "scope_separator": ",",
              "scope_param": "user_scope"},
             "token_request": {"encoding": "json", "params": {"a": "1"}, "refresh_params": {"b": "2"}},
             "token_response": {"format": "form", "ok_pointer": "/ok", "error_in_ok": true, "access_token": "/authed_user/access_token",
              "token_type": "/authed_user/token_type", "default_token_type": "bearer", "grant_expires_in": "/refresh_token_expires_in",
              "keep": {"team": "/team", "instance_url": "/instance_url"}},
             "grant": {"refresh_token": "reusable", "access_token_expires": false, "default_expires_in": 7200},
             "subject": {"from": "token_response", "pointer": "/authed_user/id"},
             "refusals": {"client_refused": ["invalid_client", "bad_client_secret"], "retried": []},
             "revocation": {"style": "request", "method": "DELETE", "url": "https://api.example/applications/{client_id}/token",
              "token": "access", "token_in": "json:access_token", "client_auth": "basic", "success": [204]}}
            """)
        #expect(d.kind == .oauth2 && d.title == "Chat" && d.endpoints.isComplete)
        #expect(d.authorization.params == [Parameter("access_type", "offline"), Parameter("prompt", "consent")])
        #expect(!d.authorization.pkce && d.authorization.scopeSeparator == "," && d.authorization.scopeParam == "user_scope")
        #expect(d.tokenRequest.encoding == .json && d.tokenRequest.params == [Parameter("a", "1")] && d.tokenRequest.refreshParams == [Parameter("b", "2")])
        let r = d.tokenResponse
        #expect(r.format == .form && r.errorInOK && r.okPointer?.description == "/ok" && r.accessToken.description == "/authed_user/access_token")
        #expect(r.defaultTokenType == .bearer && r.grantExpiresIn?.description == "/refresh_token_expires_in")
        #expect(r.keep.map(\.name) == ["instance_url", "team"])
        #expect(d.grant.refreshTokens == .reusable && !d.grant.accessTokenExpires && d.grant.defaultExpiresIn == 7200)
        #expect(d.subjectSource == SubjectSource(from: .tokenResponse, pointer: JSONPointer("/authed_user/id")!))
        #expect(d.refusals.clientRefused == ["invalid_client", "bad_client_secret"] && d.refusals.retried.isEmpty)
        #expect(d.revocation.style == .request && d.revocation.method == "DELETE" && d.revocation.token == .access
                && d.revocation.tokenIn == .json("access_token") && d.revocation.clientAuth == .basic && d.revocation.success == [204])
        // Read back from its own JSON, it is the same descriptor.
        #expect(try parse(d.json) == d)
    }

    @Test("each refusal names the member and what is wrong with it")
    func refusals() {
        let cases: [(String, String, String)] = [
            (#"{"grant": {"refresh_tokens": "reusable"}}"#, "grant.refresh_tokens", "is not a member here"),
            (#"{"protocol": "saml"}"#, "protocol", "must be one of: oidc, oauth2"),
            (#"{"token_response": {"access_token": "access_token"}}"#, "token_response.access_token", "JSON pointer"),
            (#"{"token_response": {"ok_pointer": "/a~2b"}}"#, "token_response.ok_pointer", "JSON pointer"),
            (#"{"endpoints": {"token": "ftp://x.example/token"}}"#, "endpoints.token", "https or http URL"),
            (#"{"issuer": "https://{your-org}.okta.com"}"#, "issuer", "placeholders filled in"),
            (#"{"authorization": {"scope_separator": ";"}}"#, "authorization.scope_separator", "must be"),
            (#"{"authorization": {"params": {"access_type": 1}}}"#, "authorization.params.access_type", "string value"),
            (#"{"authorization": {"pkce": "no"}}"#, "authorization.pkce", "true or false"),
            (#"{"token_response": {"default_token_type": "bot"}}"#, "token_response.default_token_type", "Bearer or DPoP"),
            (#"{"token_response": {"keep": {"a b": "/x"}}}"#, "token_response.keep.a b", "is not a name"),
            (#"{"token_response": {"keep": {"rt": "/refresh_token"}}}"#, "token_response.keep.rt", "would keep a token"),
            (#"{"token_response": {"access_token": "/authed_user/access_token", "keep": {"user": "/authed_user"}}}"#, "token_response.keep.user", "would keep a token"),
            (#"{"token_response": {"keep": {"all": ""}}}"#, "token_response.keep.all", "non-empty string"),
            (#"{"grant": {"default_expires_in": 0}}"#, "grant.default_expires_in", "seconds"),
            (#"{"subject": {"from": "token_response"}}"#, "subject.pointer", "is required"),
            (#"{"protocol": "oauth2", "subject": {"from": "id_token"}}"#, "subject.from", "no ID token"),
            (#"{"refusals": {"retried": ["invalid_client"]}}"#, "refusals", "both as retried and as refusing the client"),
            (#"{"refusals": {"retried": ["Invalid Request"]}}"#, "refusals.retried", "error codes"),
            (#"{"revocation": {"style": "request"}}"#, "revocation.url", "is required"),
            (#"{"revocation": {"style": "request", "url": "https://x.example/r", "token_in": "header:x"}}"#, "revocation.token_in", "form:NAME"),
            (#"{"revocation": {"success": [301]}}"#, "revocation.success", "2xx"),
            (#"{"revocation": {"style": "request", "url": "https://x.example/r", "token_in": "path"}}"#, "revocation.url", "{token}"),
            (#"{"subject": {"from": "userinfo", "url": "https://x.example/{user}"}}"#, "subject.url", "{token} may stand"),
            (#"{"issuer_template": "https://login.example/common/v2.0"}"#, "issuer_template", "{tenantid}"),
        ]
        for (text, member, problem) in cases {
            let e = refusal(text)
            #expect(e?.member == member && e?.problem.contains(problem) == true, "\(text): \(String(describing: e))")
        }
        #expect(refusal("[1]")?.problem == "is not a JSON object")
        // Placeholders that stand for values filled in at each use are accepted where they may.
        #expect(refusal(#"{"subject": {"from": "userinfo", "url": "https://api.example/oauth/v1/access-tokens/{token}", "pointer": "/user_id"}}"#) == nil)
        #expect(refusal(#"{"revocation": {"style": "request", "method": "DELETE", "url": "https://api.example/refresh-tokens/{token}", "token_in": "path"}}"#) == nil)
    }

    @Test("JSON pointers (RFC 6901): escapes, arrays by index, numbers and booleans as text, null as nothing")
    func pointers() throws {
        let doc = try JSONSerialization.jsonObject(with: Data(#"{"a/b": {"m~n": [10, {"id": 12345678901}]}, "ok": true, "n": null, "f": 1.5, "one": 1}"#.utf8))
        #expect(JSONPointer("/a~1b/m~0n/1/id")?.text(in: doc) == "12345678901")
        #expect(JSONPointer("/a~1b/m~0n/0")?.text(in: doc) == "10")
        #expect(JSONPointer("/ok")?.text(in: doc) == "true" && JSONPointer("/ok")?.bool(in: doc) == true)
        #expect(JSONPointer("/one")?.bool(in: doc) == nil, "a number is not a boolean")
        #expect(JSONPointer("/f")?.text(in: doc) == "1.5")
        #expect(JSONPointer("/n")?.value(in: doc) == nil && JSONPointer("/missing")?.value(in: doc) == nil)
        #expect(JSONPointer("/a~1b/m~0n/01")?.value(in: doc) == nil, "no leading zeros in an index")
        #expect(JSONPointer("a") == nil && JSONPointer("/~") == nil && JSONPointer("")?.tokens == [])
        #expect(JSONPointer("/a~1b/m~0n")?.description == "/a~1b/m~0n")
    }

    @Test("a merge patch (RFC 7396) merges objects member by member, replaces other values, removes with null")
    func mergePatch() throws {
        let target = try JSONSerialization.jsonObject(with: Data(#"{"a": {"b": 1, "c": 2}, "d": [1], "e": "x"}"#.utf8))
        let patch = try JSONSerialization.jsonObject(with: Data(#"{"a": {"b": null, "z": 3}, "d": [2], "e": null, "f": {"g": 1}}"#.utf8))
        let merged = try #require(JSONMergePatch.apply(patch, to: target) as? [String: Any])
        #expect(ProviderDescriptor.canonical(merged) == #"{"a":{"c":2,"z":3},"d":[2],"f":{"g":1}}"#)
    }

    @Test("metadata is read where each standard says: discovery appends, RFC 8414 inserts before the issuer's path")
    func metadataLocations() {
        #expect(MetadataSource.openID("https://idp.example/realms/a").url == "https://idp.example/realms/a/.well-known/openid-configuration")
        #expect(MetadataSource.openID("https://idp.example/").url == "https://idp.example/.well-known/openid-configuration")
        let rfc8414 = { (i: String) in MetadataSource(issuer: i, document: .authorizationServer).url }
        #expect(rfc8414("https://as.example/issuer1") == "https://as.example/.well-known/oauth-authorization-server/issuer1")
        #expect(rfc8414("https://as.example") == "https://as.example/.well-known/oauth-authorization-server")
        #expect(rfc8414("https://as.example/") == "https://as.example/.well-known/oauth-authorization-server")
        #expect(rfc8414("http://127.0.0.1:8080/p/x") == "http://127.0.0.1:8080/.well-known/oauth-authorization-server/p/x")
        #expect(rfc8414("not a url") == nil)
        #expect(MetadataSource(issuer: "https://l.example/common/v2.0", document: .openID, namedIssuer: "https://l.example/{tenantid}/v2.0").namedIssuer
                == "https://l.example/{tenantid}/v2.0")
    }

    @Test("a registration reads metadata unless its OAuth 2.0 descriptor gives the token endpoint; then it is known by that endpoint's origin")
    func registrationMetadata() throws {
        var c = ClientRegistration(tenant: "t", id: "c", issuer: "https://as.example/x", clientID: "id", authMethod: .clientSecretBasic,
                                   redirectURI: "https://b.example/cb", scopes: [])
        #expect(c.metadataSource == .openID("https://as.example/x"))
        c.descriptor = try parse(#"{"protocol": "oauth2"}"#)
        #expect(c.metadataSource == MetadataSource(issuer: "https://as.example/x", document: .authorizationServer))
        c.descriptor = try parse(#"{"protocol": "oauth2", "endpoints": {"token": "https://gh.example:8443/login/oauth/access_token"}}"#)
        #expect(c.metadataSource == nil)
        #expect(ClientRegistration.origin(of: c.descriptor.endpoints.token!) == "https://gh.example:8443")
        let explicit = try #require(IssuerMetadata.explicit(issuer: "https://gh.example", c.descriptor.endpoints))
        #expect(explicit.tokenEndpoint.absoluteString == "https://gh.example:8443/login/oauth/access_token" && explicit.authorizationEndpoint == nil)
    }
}
