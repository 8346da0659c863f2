import Broker
import BrokerCore
import Foundation

/// Commands implements the operator CLI through the same OperatorService as the HTTP routes.
enum Commands {
    static func tenant(_ a: Arguments, _ rt: BrokerRuntime) throws -> Int32 {
        switch a.positionals.first {
        case "put":
            guard a.positionals.count == 2 else { throw Arguments.Invalid(description: "usage: tokenbroker tenant put ID --name NAME") }
            let (t, created) = try rt.operators.putTenant(id: a.positionals[1], name: try a.required("name"), actor: "cli")
            print(Render.tenant(t))
            FileHandle.standardError.write(Data("tenant \(t.id) \(created ? "created" : "updated")\n".utf8))
        case "list":
            for t in try rt.registry.store.tenants() { print(Render.tenant(t)) }
        default:
            throw Arguments.Invalid(description: "usage: tokenbroker tenant put|list")
        }
        rt.flush()
        return 0
    }

    static func client(_ a: Arguments, _ rt: BrokerRuntime) throws -> Int32 {
        if a.positionals.first == "token" { return try appToken(a, rt) }
        guard a.positionals.first == "put" else { throw Arguments.Invalid(description: "usage: tokenbroker client put|token --tenant T ...") }
        guard let method = ClientAuthMethod(rawValue: try a.required("auth-method")) else {
            throw Arguments.Invalid(description: "--auth-method must be one of: \(ClientAuthMethod.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        func seconds(_ name: String) throws -> Double? {
            guard let v = a.value(name) else { return nil }
            guard let d = Double(v) else { throw Arguments.Invalid(description: "--\(name) must be a number of seconds") }
            return d
        }
        var policy = RefreshPolicy()
        policy.leadSeconds = try seconds("lead-seconds")
        if let m = try seconds("min-ttl") { policy.minTTL = m }
        if let j = try seconds("jitter-seconds") { policy.jitterSeconds = j }
        var secret: String?
        if let f = a.value("client-secret-file") {
            guard let s = try? String(contentsOfFile: f, encoding: .utf8) else { throw Arguments.Invalid(description: "cannot read --client-secret-file") }
            secret = s.trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let s = ProcessInfo.processInfo.environment["TOKENBROKER_CLIENT_SECRET"], !s.isEmpty {
            secret = s
        }
        let anchors = try a.value("trust-anchors-file").map { f in
            guard let pem = try? String(contentsOfFile: f, encoding: .utf8) else { throw Arguments.Invalid(description: "cannot read --trust-anchors-file") }
            return pem
        }
        // Mutual TLS (RFC 8705): the certificate chain and its key, both or neither.
        let certificate = try a.value("tls-client-certificate-file").map { f -> ClientCertificateInput in
            guard let chain = try? String(contentsOfFile: f, encoding: .utf8) else { throw Arguments.Invalid(description: "cannot read --tls-client-certificate-file") }
            guard let k = a.value("tls-client-key-file"), let key = try? String(contentsOfFile: k, encoding: .utf8) else {
                throw Arguments.Invalid(description: "--tls-client-certificate-file needs a readable --tls-client-key-file")
            }
            return ClientCertificateInput(chain: chain, key: key)
        }
        var reg = ClientRegistration(
            tenant: try a.required("tenant"), id: try a.required("id"), issuer: a.value("issuer") ?? "", clientID: try a.required("client-id"),
            authMethod: method, redirectURI: try a.required("redirect-uri"), scopes: Scopes.parse(try a.required("scopes")),
            redirectAfterAllowed: a.values("redirect-after-allowed"), refreshPolicy: policy,
            assertionAlgorithm: try a.value("assertion-alg").map { name in
                guard let alg = JWSAlgorithm(rawValue: name) else { throw Arguments.Invalid(description: "--assertion-alg must be ES256, RS256 or PS256") }
                return alg
            }, trustAnchors: anchors)
        reg.handOutCertificateBound = a.flag("hand-out-certificate-bound")
        var provider = ProviderChoice(provider: a.value("provider"), protocolName: a.value("protocol"))
        if let p = provider.protocolName, ProviderDescriptor.Kind(rawValue: p) == nil { throw Arguments.Invalid(description: "--protocol must be oidc or oauth2") }
        if let f = a.value("descriptor-file") {
            guard let data = FileManager.default.contents(atPath: f), let d = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
                throw Arguments.Invalid(description: "--descriptor-file must name a readable JSON object")
            }
            provider.patch = ProviderDescriptor.canonical(d)
        }
        let (c, created) = try rt.operators.putClient(reg, secret: secret, verify: !a.flag("no-verify"), provider: provider,
                                                     certificate: certificate, actor: "cli")
        print(Render.client(c))
        FileHandle.standardError.write(Data("client \(c.client.tenant)/\(c.client.id) \(created ? "created" : "updated")\n".utf8))
        rt.flush()
        return 0
    }

    /// `client token`: the route's ask (the same checks) through the same AppTokenService.
    static func appToken(_ a: Arguments, _ rt: BrokerRuntime) throws -> Int32 {
        var body: [String: Any] = [:]
        for member in ["scope", "audience", "resource"] { if let v = a.value(member) { body[member] = v } }
        if let m = a.value("min-ttl") {
            guard let n = Int(m) else { throw Arguments.Invalid(description: "--min-ttl must be a whole number of seconds") }
            body["min_ttl"] = n
        }
        let (ask, minTTL, _) = try AppTokenRoutes.ask(Array(try JSONSerialization.data(withJSONObject: body)))
        defer { rt.flush() }
        let t = try rt.appTokens.token(tenant: try a.required("tenant"), client: try a.required("client"), ask: ask, minTTL: minTTL, actor: "cli")
        print(String(decoding: Render.appToken(t), as: UTF8.self))
        return 0
    }

    static func apikey(_ a: Arguments, _ rt: BrokerRuntime) throws -> Int32 {
        switch a.positionals.first {
        case "create":
            let roles = try Set(a.values("role").map { r -> Role in
                guard let role = Role(rawValue: r) else { throw Arguments.Invalid(description: "unknown role '\(r)' (worker, admin, enrol, operator, proxy)") }
                return role
            })
            guard !roles.isEmpty else { throw Arguments.Invalid(description: "at least one --role is required") }
            // Which tenants is said, never implied: no --tenant does not mean every tenant.
            let tenants = a.values("tenant")
            guard tenants.isEmpty == a.flag("all-tenants") else {
                throw Arguments.Invalid(description: "say which tenants the key reaches: --tenant T (repeatable) or --all-tenants")
            }
            let expiresIn = try a.value("expires-in").map { v -> TimeInterval in
                guard let s = TimeInterval(v) else { throw Arguments.Invalid(description: "--expires-in must be a number of seconds") }
                return s
            }
            let (p, key) = try rt.operators.createKey(name: a.value("name") ?? "cli", roles: roles,
                                                      tenants: tenants.isEmpty ? [Principal.allTenants] : Set(tenants),
                                                      expiresIn: expiresIn, certificateSHA256: a.value("certificate-sha256"), actor: "cli")
            // A key is printed alone, for scripts; a certificate principal has none: its id instead.
            print(key ?? p.id)
            FileHandle.standardError.write(Data("api key \(p.id) created\(key == nil ? " for the client certificate" : "")\n".utf8))
        case "list":
            // One JSON document a line per key: id, name, roles, tenants, created, last used, expires, revoked.
            for k in try rt.operators.listKeys() { print(Render.apiKey(k)) }
        case "rotate":
            guard a.positionals.count == 2 else { throw Arguments.Invalid(description: "usage: tokenbroker apikey rotate ID [--overlap SECONDS]") }
            let overlap = try a.value("overlap").map { v -> TimeInterval in
                guard let s = TimeInterval(v) else { throw Arguments.Invalid(description: "--overlap must be a number of seconds") }
                return s
            } ?? 86_400
            let (_, key, until) = try rt.operators.rotateKey(id: a.positionals[1], overlap: overlap, actor: nil)
            print(key)
            FileHandle.standardError.write(Data("api key \(a.positionals[1]) rotated; the old secret works until \(RFC3339.format(until))\n".utf8))
        case "revoke":
            guard a.positionals.count == 2 else { throw Arguments.Invalid(description: "usage: tokenbroker apikey revoke ID") }
            try rt.operators.revokeKey(id: a.positionals[1], actor: nil)
        default:
            throw Arguments.Invalid(description: "usage: tokenbroker apikey create|list|rotate|revoke")
        }
        rt.flush()
        return 0
    }
}
