import Foundation

/// Reading a descriptor from JSON (docs/provider-descriptors.md): every member checked, an
/// unknown member refused (a misspelt `refresh_tokens` must not silently mean the default).
extension ProviderDescriptor {
    public init(json object: [String: Any]) throws(DescriptorError) {
        self.init()
        let r = Reader(object, path: "")
        try r.only(["protocol", "title", "documentation", "issuer", "issuer_template", "endpoints", "authorization", "token_request",
                    "token_response", "grant", "subject", "refusals", "revocation", "headers", "upstream"])
        kind = try r.choice("protocol", Kind.self) ?? .oidc
        title = try r.string("title")
        documentation = try r.strings("documentation") ?? []
        issuer = try r.url("issuer")?.absoluteString
        if let t = try r.string("issuer_template") {
            guard t.contains(Self.tenantPlaceholder), URL(string: t.replacingOccurrences(of: Self.tenantPlaceholder, with: "x")) != nil else {
                throw DescriptorError("issuer_template", "must be a URL with {tenantid} in it")
            }
            issuerTemplate = t
        }
        if let e = try r.object("endpoints") {
            try e.only(["authorization", "token", "revocation", "introspection", "userinfo"])
            endpoints = ProviderEndpoints(authorization: try e.url("authorization"), token: try e.url("token"), revocation: try e.url("revocation"),
                                          introspection: try e.url("introspection"), userinfo: try e.url("userinfo"))
        }
        if let a = try r.object("authorization") {
            try a.only(["params", "pkce", "scope_separator", "scope_param"])
            authorization.params = try a.parameters("params")
            authorization.pkce = try a.bool("pkce") ?? true
            if let s = try a.string("scope_separator") {
                guard s == " " || s == "," else { throw DescriptorError(a.path("scope_separator"), "must be \" \" or \",\"") }
                authorization.scopeSeparator = s
            }
            authorization.scopeParam = try a.name("scope_param") ?? "scope"
        }
        if let t = try r.object("token_request") {
            try t.only(["encoding", "params", "refresh_params"])
            tokenRequest.encoding = try t.choice("encoding", TokenRequestStyle.Encoding.self) ?? .form
            tokenRequest.params = try t.parameters("params")
            tokenRequest.refreshParams = try t.parameters("refresh_params")
        }
        if let t = try r.object("token_response") { tokenResponse = try Self.shape(t) }
        if let g = try r.object("grant") {
            try g.only(["refresh_token", "access_token_expires", "default_expires_in"])
            grant.refreshTokens = try g.choice("refresh_token", GrantLifetime.RefreshTokens.self) ?? .rotating
            grant.accessTokenExpires = try g.bool("access_token_expires") ?? true
            if let d = try g.number("default_expires_in") {
                guard d >= 1, d <= 366 * 86_400 else { throw DescriptorError(g.path("default_expires_in"), "must be 1…31622400 seconds") }
                grant.defaultExpiresIn = d
            }
        }
        if let s = try r.object("subject") {
            try s.only(["from", "url", "method", "pointer"])
            // Absent: the protocol's default (the ID token for OpenID, userinfo for OAuth 2.0).
            let from = try s.choice("from", SubjectSource.From.self) ?? (kind == .oidc ? .idToken : .userinfo)
            subject = SubjectSource(from: from, url: try s.template("url", "{token}"), method: try s.choice("method", ["GET", "POST"]) ?? "GET",
                                    pointer: try s.pointer("pointer") ?? JSONPointer("/sub")!)
            if from == .tokenResponse, try s.pointer("pointer") == nil { throw DescriptorError(s.path("pointer"), "is required with token_response") }
        }
        if let f = try r.object("refusals") {
            try f.only(["client_refused", "retried"])
            if let c = try f.codes("client_refused") { refusals.clientRefused = c }
            if let c = try f.codes("retried") { refusals.retried = c }
            if let both = refusals.retried.intersection(refusals.clientRefused).sorted().first {
                throw DescriptorError(f.path(""), "name '\(both)' both as retried and as refusing the client")
            }
        }
        if let v = try r.object("revocation") { revocation = try Self.revocation(v) }
        headers = try r.parameters("headers")
        if let u = try r.object("upstream") {
            do { upstream = try UpstreamSettings(json: u.object, descriptor: true) } catch {
                throw DescriptorError(error.member.isEmpty ? "upstream" : "upstream." + error.member, error.reason)
            }
        }
        if let bad = headers.first(where: { Self.reservedHeaders.contains($0.name.lowercased()) || $0.value.contains(where: { $0 == "\r" || $0 == "\n" }) }) {
            throw DescriptorError(r.path("headers." + bad.name), "is a header the broker writes itself, or holds a line break")
        }
        try checkCoherence()
        json = Self.canonical(object)
    }

    /// Parses a descriptor from its JSON text (as stored with a registration).
    public init(jsonText: String) throws(DescriptorError) {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(jsonText.utf8))) as? [String: Any] else {
            throw DescriptorError("", "is not a JSON object")
        }
        try self.init(json: o)
    }

    /// Headers a descriptor may not set: the broker writes them for every request.
    static let reservedHeaders: Set<String> = ["authorization", "content-type", "content-length", "host", "dpop", "transfer-encoding",
                                               "connection", "accept", "user-agent", "traceparent"]

    /// Compact JSON with sorted keys: the same descriptor always reads back as the same text.
    public static func canonical(_ object: [String: Any]) -> String {
        guard let d = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return "{}" }
        return String(decoding: d, as: UTF8.self)
    }

    private static func shape(_ t: Reader) throws(DescriptorError) -> TokenResponseShape {
        try t.only(["format", "error_in_ok", "ok_pointer", "error_pointer", "access_token", "refresh_token", "expires_in", "scope",
                    "scope_separator", "token_type", "id_token", "default_token_type", "grant_expires_in", "keep"])
        var s = TokenResponseShape()
        s.format = try t.choice("format", TokenResponseShape.Format.self) ?? .auto
        s.errorInOK = try t.bool("error_in_ok") ?? false
        s.okPointer = try t.pointer("ok_pointer")
        s.errorPointer = try t.pointer("error_pointer") ?? s.errorPointer
        if let sep = try t.string("scope_separator") {
            guard sep == " " || sep == "," else { throw DescriptorError(t.path("scope_separator"), "must be \" \" or \",\"") }
            s.scopeSeparator = sep
        }
        s.accessToken = try t.pointer("access_token") ?? s.accessToken
        s.refreshToken = try t.pointer("refresh_token") ?? s.refreshToken
        s.expiresIn = try t.pointer("expires_in") ?? s.expiresIn
        s.scope = try t.pointer("scope") ?? s.scope
        s.tokenType = try t.pointer("token_type") ?? s.tokenType
        s.idToken = try t.pointer("id_token") ?? s.idToken
        if let name = try t.string("default_token_type") {
            guard let type = TokenType(named: name) else { throw DescriptorError(t.path("default_token_type"), "must be Bearer or DPoP") }
            s.defaultTokenType = type
        }
        s.grantExpiresIn = try t.pointer("grant_expires_in")
        if let k = try t.object("keep") {
            let names = k.keys
            guard names.count <= TokenResponseShape.maxKept else { throw DescriptorError(t.path("keep"), "may name at most \(TokenResponseShape.maxKept) members") }
            // Kept members are stored unsealed and handed out: none may hold a token.
            let tokens = [s.accessToken, s.refreshToken, s.idToken] + [TokenResponseShape()].flatMap { [$0.accessToken, $0.refreshToken, $0.idToken] }
            s.keep = try names.map { name throws(DescriptorError) in
                guard Reader.isName(name) else { throw DescriptorError(k.path(name), "is not a name of 1…64 letters, digits, '_', '-' or '.'") }
                let pointer = try k.pointer(name)!
                if tokens.contains(where: { $0.tokens.starts(with: pointer.tokens) }) {
                    throw DescriptorError(k.path(name), "would keep a token (\(pointer) holds one): kept members are stored unsealed and handed out")
                }
                return TokenResponseShape.Kept(name: name, pointer: pointer)
            }
        }
        return s
    }

    private static func revocation(_ v: Reader) throws(DescriptorError) -> RevocationStyle {
        try v.only(["style", "method", "url", "token", "token_in", "client_auth", "success"])
        var s = RevocationStyle()
        s.style = try v.choice("style", RevocationStyle.Style.self) ?? .rfc7009
        s.method = try v.choice("method", ["POST", "DELETE", "GET"]) ?? "POST"
        if let u = try v.string("url") {
            guard let url = URL(string: u.replacingOccurrences(of: "{client_id}", with: "x").replacingOccurrences(of: "{token}", with: "x")),
                  ["https", "http"].contains(url.scheme ?? "") else {
                throw DescriptorError(v.path("url"), "must be an https or http URL ({client_id} and {token} may stand for the client id and the token)")
            }
            s.url = u
        }
        s.token = try v.choice("token", RevocationStyle.Token.self)
        if let p = try v.string("token_in") {
            let parts = p.split(separator: ":", maxSplits: 1).map(String.init)
            switch (parts.first, parts.count == 2 ? Reader.isName(parts[1]) : false) {
            case ("bearer", _) where parts.count == 1: s.tokenIn = .bearer
            case ("path", _) where parts.count == 1: s.tokenIn = .path
            case ("form", true): s.tokenIn = .form(parts[1])
            case ("json", true): s.tokenIn = .json(parts[1])
            case ("query", true): s.tokenIn = .query(parts[1])
            default: throw DescriptorError(v.path("token_in"), "must be form:NAME, json:NAME, query:NAME, bearer or path")
            }
        }
        s.clientAuth = try v.choice("client_auth", RevocationStyle.ClientAuth.self) ?? .none
        if let codes = try v.numbers("success") {
            guard !codes.isEmpty, codes.allSatisfy({ (200...299).contains($0) }) else { throw DescriptorError(v.path("success"), "must list 2xx statuses") }
            s.success = Set(codes)
        }
        if s.style == .request, s.url == nil { throw DescriptorError(v.path("url"), "is required with the request style") }
        if s.tokenIn == .path, s.url?.contains("{token}") != true { throw DescriptorError(v.path("url"), "must hold {token} when token_in is path") }
        return s
    }

    /// Rules between members.
    private func checkCoherence() throws(DescriptorError) {
        if kind == .oauth2, subject?.from == .idToken { throw DescriptorError("subject.from", "cannot be id_token with protocol oauth2 (no ID token is asked for)") }
    }
}
