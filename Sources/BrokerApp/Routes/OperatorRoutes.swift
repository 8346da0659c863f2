import Broker
import BrokerCore
import BrokerHTTP
import Foundation

/// Operator routes (spec §4.3), mirrored by the CLI: tenants, clients, API keys.
struct OperatorRoutes {
    let runtime: BrokerRuntime

    struct TenantBody: Decodable { var name: String }

    struct ClientBody: Decodable {
        var issuer: String
        var clientID: String
        var authMethod: String
        var clientSecret: String?
        var redirectURI: String
        var scopes: [String]
        var redirectAfterAllowed: [String]?
        var refreshPolicy: Policy?
        var maxConcurrentRefreshes: Int?

        struct Policy: Decodable {
            var leadSeconds: Double?
            var leadFraction: Double?
            var leadCapSeconds: Double?
            var jitterSeconds: Double?
            var minTTL: Double?
            enum CodingKeys: String, CodingKey {
                case leadSeconds = "lead_seconds", leadFraction = "lead_fraction", leadCapSeconds = "lead_cap_seconds"
                case jitterSeconds = "jitter_seconds", minTTL = "min_ttl"
            }
        }

        enum CodingKeys: String, CodingKey {
            case issuer, clientID = "client_id", authMethod = "auth_method", clientSecret = "client_secret"
            case redirectURI = "redirect_uri", scopes, redirectAfterAllowed = "redirect_after_allowed"
            case refreshPolicy = "refresh_policy", maxConcurrentRefreshes = "max_concurrent_refreshes"
        }

        func registration(tenant: String, id: String) throws -> ClientRegistration {
            guard let method = ClientAuthMethod(rawValue: authMethod) else {
                throw BrokerError.badRequest(code: "invalid_request", message: "'auth_method' must be one of: \(ClientAuthMethod.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let d = RefreshPolicy()
            let p = refreshPolicy.map {
                RefreshPolicy(leadSeconds: $0.leadSeconds, leadFraction: $0.leadFraction ?? d.leadFraction, leadCap: $0.leadCapSeconds ?? d.leadCap,
                              jitterSeconds: $0.jitterSeconds ?? d.jitterSeconds, minTTL: $0.minTTL ?? d.minTTL)
            } ?? d
            return ClientRegistration(tenant: tenant, id: id, issuer: issuer, clientID: clientID, authMethod: method, redirectURI: redirectURI,
                                      scopes: scopes, redirectAfterAllowed: redirectAfterAllowed ?? [], refreshPolicy: p,
                                      maxConcurrentRefreshes: maxConcurrentRefreshes ?? 8)
        }
    }

    struct KeyBody: Decodable {
        var name: String
        var roles: [String]
        var tenants: [String]
    }

    func register(_ r: inout Router) {
        r.add("PUT", "/v1/tenants/{t}") { req in
            let tenant = req[param: "t"]
            return runtime.guarded(req, .operator, tenant: tenant) { p in
                let b = try RequestBody.decode(TenantBody.self, from: req)
                return runtime.later(req) {
                    let (t, created) = try runtime.operators.putTenant(id: tenant, name: b.name, actor: p.id)
                    return .json(created ? 201 : 200, Render.tenant(t))
                }
            }
        }
        r.add("PUT", "/v1/tenants/{t}/clients/{c}") { req in
            let tenant = req[param: "t"]
            return runtime.guarded(req, .operator, tenant: tenant) { p in
                let b = try RequestBody.decode(ClientBody.self, from: req)
                let reg = try b.registration(tenant: tenant, id: req[param: "c"])
                return runtime.later(req) {
                    let (c, created) = try runtime.operators.putClient(reg, secret: b.clientSecret, actor: p.id)
                    return .json(created ? 201 : 200, Render.client(c, hasSecret: c.authMethod.needsSecret))
                }
            }
        }
        r.add("POST", "/v1/apikeys") { req in
            runtime.guarded(req, .operator, tenant: nil as String?) { p in
                let b = try RequestBody.decode(KeyBody.self, from: req)
                let roles = try Set(b.roles.map { name -> Role in
                    guard let r = Role(rawValue: name) else {
                        throw BrokerError.badRequest(code: "invalid_request", message: "unknown role '\(name)'")
                    }
                    return r
                })
                return runtime.later(req) {
                    let (k, key) = try runtime.operators.createKey(name: b.name, roles: roles, tenants: Set(b.tenants), actor: p.id)
                    return .json(201, JSONText.object([
                        ("id", JSONText.quote(k.id)), ("key", JSONText.quote(key)), ("name", JSONText.quote(k.name)),
                        ("roles", JSONText.strings(k.roles.map(\.rawValue).sorted())), ("tenants", JSONText.strings(k.tenants.sorted()))]))
                }
            }
        }
        r.add("DELETE", "/v1/apikeys/{id}") { req in
            runtime.guarded(req, .operator, tenant: nil as String?) { p in
                runtime.later(req) {
                    try runtime.operators.revokeKey(id: req[param: "id"], actor: p)
                    runtime.auth.forget(.apiKey(id: req[param: "id"]))
                    return HTTPResponse(status: 204)
                }
            }
        }
    }
}
