import BrokerHTTP
import Foundation

/// Test controls for lost and late answers and for the optional features (unauthenticated: the
/// IdP listens on loopback only). Every switch answers what is now in force.
extension DevIdP {
    /// `{"mode": "late" | "drop" | null, "delay_ms"?: 0, "count"?: 1, "client_id"?}`: the next
    /// `count` refresh_token grants (of `client_id`, else of any client) are processed — the
    /// token rotated — and then answered `delay_ms` late, or dropped after `delay_ms` without any
    /// answer. A null or absent mode clears the fault. Answers `{"ok": true}`.
    func setRefreshFault(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = Self.object(req) else { return json(400, ["error": "invalid_request"]) }
        guard let name = o["mode"] as? String else {
            state.withLock { $0.refreshFault = nil }
            return json(200, ["ok": true])
        }
        let delay = (o["delay_ms"] as? Int) ?? 0, count = (o["count"] as? Int) ?? 1
        guard let mode = RefreshFault.Mode(rawValue: name), delay >= 0, count >= 1 else {
            return json(400, ["error": "invalid_request", "error_description": "mode late or drop, delay_ms >= 0, count >= 1"])
        }
        let fault = RefreshFault(mode: mode, delayMS: delay, remaining: count, client: o["client_id"] as? String)
        state.withLock { $0.refreshFault = fault }
        return json(200, ["ok": true])
    }

    /// `{"seconds": S, "process"?: "first" | "last"}`: every token-endpoint request arriving in
    /// the next S seconds is held until they are over — processed on arrival with its answer
    /// held (`first`, the default), or processed when the stall ends (`last`). `seconds` 0 ends
    /// a stall (requests already held keep their deadline). Answers `{"until": epoch seconds,
    /// "process"}`.
    func setStall(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = Self.object(req), let seconds = (o["seconds"] as? NSNumber)?.doubleValue, seconds >= 0 else {
            return json(400, ["error": "invalid_request", "error_description": "seconds"])
        }
        let process = (o["process"] as? String) ?? "first"
        guard process == "first" || process == "last" else {
            return json(400, ["error": "invalid_request", "error_description": "process first or last"])
        }
        let until = Date().addingTimeInterval(seconds)
        state.withLock { $0.stall = seconds > 0 ? Stall(until: until, processFirst: process == "first") : nil }
        return json(200, ["until": until.timeIntervalSince1970, "process": process])
    }

    /// `{"introspection"?: bool, "kill_old_access_tokens"?: bool, "iss_parameter"?: bool}`: switches RFC 7662
    /// introspection (default on; off: no `introspection_endpoint` in discovery and 404 at
    /// /introspect) and the killing of a family's earlier access tokens at each rotation
    /// (default off), and RFC 9207 `iss` in authorization responses and discovery (default on);
    /// `glewlwyd_nonce`: DPoP nonces one per client for token, PAR and userinfo, PAR refusing a
    /// proof without it with 403 and no `DPoP-Nonce` (DevIdP+DPoP). Answers the settings now in
    /// force, in the same shape.
    func changeSettings(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = req.body.isEmpty ? [:] : Self.object(req) else { return json(400, ["error": "invalid_request"]) }
        let now = state.withLock { s -> DevIdPState.Settings in
            if let on = o["introspection"] as? Bool { s.settings.introspection = on }
            if let on = o["revocation"] as? Bool { s.settings.revocation = on }
            if let on = o["kill_old_access_tokens"] as? Bool { s.settings.killOldAccessTokens = on }
            if let on = o["iss_parameter"] as? Bool { s.settings.issParameter = on }
            if let par = o["par"] as? String, ["off", "on", "required"].contains(par) { s.settings.par = par }
            if let on = o["dpop_nonce"] as? Bool { s.settings.dpopNonce = on; s.dpopNonce = DevIdPState.newNonce() }
            if let on = o["resource_nonce"] as? Bool { s.settings.resourceNonce = on; s.dpopNonce = DevIdPState.newNonce() }
            if let on = o["glewlwyd_nonce"] as? Bool { s.settings.glewlwydNonce = on }
            if let on = o["fapi2"] as? Bool { s.settings.fapi2 = on }
            if o["id_token_signing_alg_values_supported"] != nil {
                s.settings.idTokenAlgorithms = o["id_token_signing_alg_values_supported"] as? [String]
            }
            return s.settings
        }
        return json(200, ["introspection": now.introspection, "revocation": now.revocation, "kill_old_access_tokens": now.killOldAccessTokens,
                          "iss_parameter": now.issParameter, "par": now.par, "dpop_nonce": now.dpopNonce,
                          "resource_nonce": now.resourceNonce, "glewlwyd_nonce": now.glewlwydNonce, "fapi2": now.fapi2])
    }

    /// The request's JSON object body, or nil (not JSON: the caller answers 400).
    static func object(_ req: HTTPRequest) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(req.body))) as? [String: Any]
    }
}
