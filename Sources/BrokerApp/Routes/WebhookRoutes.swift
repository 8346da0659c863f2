import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// A tenant's webhook endpoints (role operator of the tenant), their secrets shown once, and
/// their delivery log.
struct WebhookRoutes {
    let gate: Guard
    let webhooks: WebhookService

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/webhooks") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { p in
                let b = try JSONObject.parse(req.body)
                let url = try b.requiredString("url")
                let types = try b.strings("events").map { names in
                    try names.map { name throws(BrokerError) -> WebhookEventType in
                        guard let t = WebhookEventType(rawValue: name) else {
                            throw .badRequest(code: "invalid_request",
                                              message: "'events' must name: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", "))")
                        }
                        return t
                    }
                }
                return gate.later(req) {
                    let (e, secret) = try webhooks.create(tenant: tenant, url: url, events: types, actor: p.id)
                    return .json(201, Self.render(e, secret: secret))
                }
            }
        }
        r.add("GET", "/v1/tenants/{t}/webhooks") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { _ in
                gate.later(req) {
                    .json(200, JSONText.object([("webhooks", JSONText.array(try webhooks.list(tenant: tenant).map { Self.render($0) }))]))
                }
            }
        }
        r.add("DELETE", "/v1/tenants/{t}/webhooks/{id}") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { p in
                gate.later(req) {
                    try webhooks.delete(tenant: tenant, id: req[param: "id"], actor: p.id)
                    return HTTPResponse(status: 204)
                }
            }
        }
        r.add("POST", "/v1/tenants/{t}/webhooks/{id}/rotate") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { p in
                let overlap = try (req.body.isEmpty ? nil : JSONObject.parse(req.body).int("overlap_seconds")) ?? 86_400
                return gate.later(req) {
                    let (e, secret) = try webhooks.rotate(tenant: tenant, id: req[param: "id"], overlap: TimeInterval(overlap), actor: p.id)
                    return .json(200, Self.render(e, secret: secret))
                }
            }
        }
        r.add("GET", "/v1/tenants/{t}/webhooks/{id}/deliveries") { req in
            let tenant = req[param: "t"]
            return gate.guarded(req, .operator, tenant: tenant) { _ in
                let limit = try QueryParameters(req, allowed: ["limit"]).limit(default: 50, max: 500)
                return gate.later(req) {
                    let list = try webhooks.deliveries(tenant: tenant, id: req[param: "id"], limit: limit)
                    return .json(200, JSONText.object([("deliveries", JSONText.array(list.map(Self.render)))]))
                }
            }
        }
    }

    static func render(_ e: WebhookEndpoint, secret: String? = nil) -> String {
        var members = [("id", JSONText.quote(e.id)), ("url", JSONText.quote(e.url)),
                       ("events", JSONText.array(e.events.map { JSONText.quote($0.rawValue) })),
                       ("created_at", RFC3339.optional(e.createdAt)), ("previous_valid_until", RFC3339.optional(e.previousValidUntil))]
        if let secret { members.append(("secret", JSONText.quote(secret))) }
        return JSONText.object(members)
    }

    static func render(_ d: WebhookDeliveryRecord) -> String {
        JSONText.object([("event_id", JSONText.quote(d.eventID)), ("type", JSONText.quote(d.type.rawValue)),
                         ("ordering_key", JSONText.quote(d.orderingKey)), ("state", JSONText.quote(d.state.rawValue)),
                         ("attempts", String(d.attempts)), ("last_status", d.lastStatus.map(String.init) ?? "null"),
                         ("last_error", d.lastError.map(JSONText.quote) ?? "null"), ("created_at", RFC3339.optional(d.createdAt)),
                         ("delivered_at", RFC3339.optional(d.deliveredAt)), ("next_attempt_at", RFC3339.optional(d.nextAttemptAt))])
    }
}
