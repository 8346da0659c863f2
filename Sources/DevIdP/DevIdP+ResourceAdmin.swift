import BrokerHTTP
import Foundation

/// Test controls of the protected resource (unauthenticated: the IdP listens on loopback only),
/// in the style of DevIdP+FaultAdmin, and its counters in `/stats`.
extension DevIdP {
    func addResourceAdmin(to r: inout Router) {
        r.add("POST", "/admin/resource/kill") { [self] req in .now(killAccessTokens(req)) }
        r.add("POST", "/admin/resource/fault") { [self] req in .now(setResourceFault(req)) }
        r.add("POST", "/admin/resource/settings") { [self] req in .now(changeResourceSettings(req)) }
    }

    /// `{"client_id", "subject"?}`: every access token issued so far to the client (for the
    /// subject) is dead — refused `invalid_token`, inactive at introspection; tokens issued later
    /// live. Answers `{"killed": N}`.
    func killAccessTokens(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = Self.object(req), let client = o["client_id"] as? String else {
            return json(400, ["error": "invalid_request", "error_description": "client_id"])
        }
        let subject = o["subject"] as? String
        let killed = state.withLock { s -> Int in
            var n = 0
            for (jti, at) in s.accessTokens where at.client == client && (subject == nil || at.subject == subject) && !at.killed {
                s.accessTokens[jti]?.killed = true
                n += 1
            }
            return n
        }
        return json(200, ["killed": killed])
    }

    /// `{"status": 429 | 503 | null, "count"?: 1, "retry_after"?: seconds, "retry_after_form"?:
    /// "seconds" | "date", "client_id"?}`: the next `count` resource calls (with a token of
    /// `client_id`, else any) are answered `status`, with `Retry-After: <seconds>` or an
    /// HTTP-date that many seconds ahead (none without `retry_after`). A null status clears it.
    /// Answers `{"ok": true}`.
    func setResourceFault(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = Self.object(req) else { return json(400, ["error": "invalid_request"]) }
        guard let status = o["status"] as? Int else {
            state.withLock { $0.resource.fault = nil }
            return json(200, ["ok": true])
        }
        let count = (o["count"] as? Int) ?? 1, form = (o["retry_after_form"] as? String) ?? "seconds"
        let seconds = o["retry_after"] as? Int
        guard status == 429 || status == 503, count >= 1, form == "seconds" || form == "date", (seconds ?? 0) >= 0 else {
            return json(400, ["error": "invalid_request", "error_description": "status 429 or 503, count >= 1, retry_after >= 0, retry_after_form seconds or date"])
        }
        let retry = seconds.map { form == "date" ? ResourceFault.RetryAfter.date(secondsAhead: $0) : .seconds($0) }
        let fault = ResourceFault(status: status, retryAfter: retry, remaining: count, client: o["client_id"] as? String)
        state.withLock { $0.resource.fault = fault }
        return json(200, ["ok": true])
    }

    /// `{"plain_401"?: bool, "delay_ms"?: int}`: token refusals as a bare `401` with
    /// `WWW-Authenticate: Bearer realm="dev"` (default off); every resource answer `delay_ms`
    /// late (default 0). Answers the settings now in force, in the same shape.
    func changeResourceSettings(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = req.body.isEmpty ? [:] : Self.object(req) else { return json(400, ["error": "invalid_request"]) }
        if let d = o["delay_ms"] as? Int, d < 0 { return json(400, ["error": "invalid_request", "error_description": "delay_ms >= 0"]) }
        let now = state.withLock { s -> ResourceSwitches in
            if let on = o["plain_401"] as? Bool { s.resource.plain401 = on }
            if let d = o["delay_ms"] as? Int { s.resource.delayMS = d }
            return s.resource
        }
        return json(200, ["plain_401": now.plain401, "delay_ms": now.delayMS])
    }

    /// The resource's counters of `clientID` (of every client, and of calls without a token of
    /// ours, when nil), as `/stats` fields.
    func resourceStats(_ clientID: String?) -> [String: Any] {
        let c = state.withLock { s -> ResourceCounters in
            guard let clientID else { return s.resourceCounters.values.reduce(into: ResourceCounters()) { $0.add($1) } }
            return s.resourceCounters[clientID] ?? .init()
        }
        return ["resource_accepted": c.accepted, "resource_refusals": c.refused.values.reduce(0, +),
                "resource_refusals_by_reason": c.refused, "resource_rate_limited": c.rateLimited,
                "resource_bytes_out": c.bytesOut, "resource_bytes_in": c.bytesIn,
                "resource_certificate_bound": c.certificateBound]
    }
}
