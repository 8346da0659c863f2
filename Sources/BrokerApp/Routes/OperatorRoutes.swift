import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// Operator routes, mirrored by the CLI: tenants, clients, API keys.
struct OperatorRoutes {
    let gate: Guard
    let operators: OperatorService

    /// The client registration in a PUT body; the secret is returned separately, and
    /// whether DPoP is to follow the issuer's metadata (`"dpop": "auto"`). `issuer` may be
    /// absent when the provider's descriptor has one (or its endpoints): the catalogue resolves it.
    static func registration(_ b: JSONObject, tenant: String, id: String) throws -> (ClientRegistration, secret: String?, dpopAuto: Bool) {
        let methodName = try b.requiredString("auth_method")
        guard let method = ClientAuthMethod(rawValue: methodName) else {
            throw BrokerError.badRequest(code: "invalid_request", message: "'auth_method' must be one of: \(ClientAuthMethod.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var policy = RefreshPolicy()
        if let p = try b.object("refresh_policy") {
            policy.leadSeconds = try p.double("lead_seconds")
            policy.leadFraction = try p.double("lead_fraction") ?? policy.leadFraction
            policy.leadCap = try p.double("lead_cap_seconds") ?? policy.leadCap
            policy.jitterSeconds = try p.double("jitter_seconds") ?? policy.jitterSeconds
            policy.minTTL = try p.double("min_ttl") ?? policy.minTTL
            policy.idleAfter = try p.double("idle_after_seconds")
            policy.keepaliveEvery = try p.double("keepalive_every_seconds") ?? policy.keepaliveEvery
            policy.grantLifetime = try p.double("grant_lifetime_seconds") ?? policy.grantLifetime
            policy.grantLifetimeRolling = try p.bool("grant_lifetime_rolling") ?? policy.grantLifetimeRolling
        }
        // DPoP (RFC 9449): true, false, or "auto" (bound when the issuer advertises the algorithm).
        // A boolean is not a string: not "auto", and read (or refused) as a boolean on the next line.
        let dpopAuto = (try? b.string("dpop")) == "auto"
        let dpopOn = dpopAuto ? false : try b.bool("dpop") ?? false
        let dpopAlg = try b.string("dpop_alg").map { name throws(BrokerError) -> JWSAlgorithm in
            guard let alg = JWSAlgorithm(rawValue: name), alg != .rs256 else {
                throw .badRequest(code: "invalid_request", message: "'dpop_alg' must be ES256 or PS256")
            }
            return alg
        } ?? .es256
        guard let scopes = try b.strings("scopes") else {
            throw BrokerError.badRequest(code: "invalid_request", message: "'scopes' is required")
        }
        var reg = ClientRegistration(
            tenant: tenant, id: id, issuer: try b.string("issuer") ?? "", clientID: try b.requiredString("client_id"), authMethod: method,
            redirectURI: try b.requiredString("redirect_uri"), scopes: scopes, redirectAfterAllowed: try b.strings("redirect_after_allowed") ?? [],
            refreshPolicy: policy, maxConcurrentRefreshes: try b.int("max_concurrent_refreshes") ?? 8,
            assertionAlgorithm: try b.string("assertion_alg").map { name throws(BrokerError) -> JWSAlgorithm in
                guard let alg = JWSAlgorithm(rawValue: name) else {
                    throw .badRequest(code: "invalid_request", message: "'assertion_alg' must be ES256, RS256 or PS256")
                }
                return alg
            },
            onAmbiguousRefresh: try b.string("on_ambiguous_refresh").map { name throws(BrokerError) -> AmbiguousRefreshPolicy in
                guard let p = AmbiguousRefreshPolicy(rawValue: name) else {
                    throw .badRequest(code: "invalid_request", message: "'on_ambiguous_refresh' must be fail_closed or retry")
                }
                return p
            } ?? .failClosed,
            dpopAlgorithm: dpopOn || dpopAuto ? dpopAlg : nil,
            profile: try b.string("profile").map { name throws(BrokerError) -> ClientProfile in
                guard let p = ClientProfile(rawValue: name) else {
                    throw .badRequest(code: "invalid_request", message: "'profile' must be standard or fapi2")
                }
                return p
            } ?? .standard,
            trustAnchors: try b.string("trust_anchors"))
        reg.disabled = try b.bool("disabled") ?? false
        reg.handOutCertificateBound = try b.bool("hand_out_certificate_bound") ?? false
        return (reg, try b.string("client_secret"), dpopAuto)
    }

    /// A PUT body's TLS client certificate chain and key (PEM, RFC 8705 §2): both or neither.
    static func certificate(_ b: JSONObject) throws -> ClientCertificateInput? {
        let chain = try b.string("tls_client_certificate"), key = try b.string("tls_client_key")
        switch (chain, key) {
        case (nil, nil): return nil
        case (let c?, let k?): return ClientCertificateInput(chain: c, key: k)
        case (_?, nil): throw BrokerError.badRequest(code: "invalid_request", message: "'tls_client_certificate' needs its 'tls_client_key'")
        case (nil, _?): throw BrokerError.badRequest(code: "invalid_request", message: "'tls_client_key' needs its 'tls_client_certificate'")
        }
    }

    /// The provider a PUT body names: `provider` (a catalogue entry), `protocol` (`oidc` or
    /// `oauth2`), and `descriptor`, a JSON object kept as compact text for the catalogue to merge.
    static func providerChoice(_ b: JSONObject, body: [UInt8]) throws -> ProviderChoice {
        var choice = ProviderChoice(provider: try b.string("provider"), protocolName: try b.string("protocol"))
        if let p = choice.protocolName, ProviderDescriptor.Kind(rawValue: p) == nil {
            throw BrokerError.badRequest(code: "invalid_request", message: "'protocol' must be oidc or oauth2")
        }
        if try b.object("descriptor") != nil, let whole = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
           let d = whole["descriptor"] as? [String: Any] {
            choice.patch = ProviderDescriptor.canonical(d)
        }
        return choice
    }

    /// A PUT body's `upstream` object (every member checked; unknown ones refused), or nil.
    static func upstream(_ b: JSONObject, body: [UInt8]) throws -> UpstreamSettings? {
        guard try b.object("upstream") != nil, let whole = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let o = whole["upstream"] as? [String: Any] else { return nil }
        do { return try UpstreamSettings(json: o) } catch {
            throw BrokerError.badRequest(code: "invalid_request", message: error.message)
        }
    }

    func register(_ r: inout Router) {
        r.add("PUT", "/v1/tenants/{t}") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { p in
                let name = try JSONObject.parse(req.body).requiredString("name")
                return gate.later(req) {
                    let (t, created) = try operators.putTenant(id: tenant, name: name, actor: p.id)
                    return .json(created ? 201 : 200, Render.tenant(t))
                }
            }
        }
        r.add("PUT", "/v1/tenants/{t}/clients/{c}") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { p in
                let verify = try QueryParameters(req, allowed: ["verify"]).bool("verify", default: true)
                let body = try JSONObject.parse(req.body)
                let (registered, secret, dpopAuto) = try Self.registration(body, tenant: tenant, id: req[param: "c"])
                var reg = registered
                reg.upstream = try Self.upstream(body, body: req.body)
                let asked = reg
                let provider = try Self.providerChoice(body, body: req.body)
                return gate.later(req) {
                    let certificate = try Self.certificate(body)
                let (c, created) = try operators.putClient(asked, secret: secret, verify: verify, dpopAuto: dpopAuto, provider: provider,
                                                               certificate: certificate, actor: p.id)
                    return .json(created ? 201 : 200, Render.client(c))
                }
            }
        }
        r.add("GET", "/v1/tenants/{t}/clients/{c}") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { _ in
                gate.later(req) { .json(200, Render.client(try operators.clientView(tenant: tenant, id: req[param: "c"]))) }
            }
        }
        r.add("POST", "/v1/apikeys") { req in
            gate.guarded(req, .operator, tenant: nil as String?) { p in
                let b = try JSONObject.parse(req.body)
                let name = try b.requiredString("name")
                let tenants = try b.strings("tenants") ?? []
                let expiresIn = try b.int("expires_in")
                let certificate = try b.string("certificate_sha256")
                let roles = try Set((try b.strings("roles") ?? []).map { name -> Role in
                    guard let r = Role(rawValue: name) else {
                        throw BrokerError.badRequest(code: "invalid_request", message: "unknown role '\(name)'")
                    }
                    return r
                })
                return gate.later(req) {
                    let (k, key) = try operators.createKey(name: name, roles: roles, tenants: Set(tenants),
                                                                   expiresIn: expiresIn.map(TimeInterval.init), certificateSHA256: certificate,
                                                                   actor: p.id)
                    return .json(201, JSONText.object([("id", JSONText.quote(k.id))] + (key.map { [("key", JSONText.quote($0))] } ?? []) + [
                        ("name", JSONText.quote(k.name)),
                        ("roles", JSONText.strings(k.roles.map(\.rawValue).sorted())), ("tenants", JSONText.strings(k.tenants.sorted())),
                        ("expires_at", RFC3339.optional(k.expiresAt)),
                        ("certificate_sha256", k.certificateSHA256.map(JSONText.quote) ?? "null")]))
                }
            }
        }
        r.add("GET", "/v1/apikeys") { req in
            gate.guarded(req, .operator, tenant: nil as String?) { _ in
                gate.later(req) { .json(200, Render.apiKeys(try operators.listKeys())) }
            }
        }
        r.add("POST", "/v1/apikeys/{id}/rotate") { req in
            gate.guarded(req, .operator, tenant: nil as String?) { p in
                let overlap = try (req.body.isEmpty ? nil : JSONObject.parse(req.body).int("overlap_seconds")) ?? 86_400
                return gate.later(req) {
                    let (k, key, until) = try operators.rotateKey(id: req[param: "id"], overlap: TimeInterval(overlap), actor: p)
                    return .json(200, JSONText.object([("id", JSONText.quote(k.id)), ("key", JSONText.quote(key)),
                                                       ("previous_valid_until", RFC3339.optional(until))]))
                }
            }
        }
        r.add("DELETE", "/v1/apikeys/{id}") { req in
            gate.guarded(req, .operator, tenant: nil as String?) { p in
                gate.later(req) {
                    try operators.revokeKey(id: req[param: "id"], actor: p)
                    return HTTPResponse(status: 204)
                }
            }
        }
    }
}
