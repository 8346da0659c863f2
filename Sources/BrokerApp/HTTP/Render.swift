import Broker
import BrokerCore
import BrokerHTTP
import Foundation

/// Render writes the API's JSON documents. Sessions are rendered as metadata only: no function
/// here can print token material.
enum Render {
    /// The members of a token document, written into an open object. A plain token
    /// from the cache brings its memo: the members are rendered there once for each `expires_in`
    /// and copied from it until the second turns.
    static func token(_ t: IssuedToken, into w: inout JSONWriter) {
        guard let memo = t.memo else { return members(t, into: &w) }
        if let kept = memo.bytes(expiresIn: t.expiresIn) { return w.members(kept) }
        var m = JSONWriter(capacity: t.accessToken.utf8.count + 224)
        members(t, into: &m)
        memo.keep(m.bytes, expiresIn: t.expiresIn)
        w.members(m.bytes)
    }

    private static func members(_ t: IssuedToken, into w: inout JSONWriter) {
        w.string("access_token", t.accessToken)
        w.string("token_type", t.tokenType.rawValue)
        if t.neverExpires {
            w.key("expires_at"); w.raw("null")
            w.key("expires_in"); w.raw("null")
        } else {
            w.time("expires_at", t.expiresAt, millis: true)
            w.int("expires_in", t.expiresIn)
        }
        w.string("scope", Scopes.format(t.scope))
        w.string("session_id", t.sessionID)
        w.string("subject", t.subject)
        w.key("end_user")
        if let u = t.endUser { w.string(u) } else { w.raw("null") }
        if let type = t.issuedTokenType { w.string("issued_token_type", type) }
        if let m = t.metadata {
            w.key("metadata")
            w.raw(m)
        }
        if !t.dpopProofs.isEmpty {
            w.key("dpop_proofs")
            w.beginArray()
            for p in t.dpopProofs { w.string(p) }
            w.endArray()
        }
    }

    static func tokenResult(_ r: Result<IssuedToken, BrokerError>, requestID: String) -> HTTPResponse {
        switch r {
        case .success(let t):
            var w = JSONWriter(capacity: t.accessToken.utf8.count + 256)
            w.beginObject()
            token(t, into: &w)
            w.endObject()
            return HTTPResponse.json(200, w.bytes).uncacheable()
        case .failure(let e):
            return ErrorResponse.response(e, requestID: requestID)
        }
    }

    /// The document shows when the grant ends (the IdP's absolute refresh-token
    /// lifetime, from the client's policy), since no token response says so, and how the engine
    /// refreshes the session (`refresh_mode`: proactive, or idle — on demand and a keep-alive).
    static func session(_ s: Session) -> String { JSONText.object(sessionMembers(s)) }

    /// A session's members, for the documents that show one.
    static func sessionMembers(_ s: Session) -> [(String, String)] {
        [
            ("session_id", JSONText.quote(s.id)), ("tenant", JSONText.quote(s.tenant)), ("client", JSONText.quote(s.client)),
            ("subject", JSONText.quote(s.subject)), ("end_user", JSONText.optional(s.endUser)), ("issuer", JSONText.quote(s.issuer)), ("scope", JSONText.quote(Scopes.format(s.scopes))),
            ("state", JSONText.quote(s.state.rawValue)), ("reason", JSONText.optional(s.reason)),
            ("refresh_attempt_started_at", RFC3339.optional(s.attempt?.startedAt)), ("backoff_until", RFC3339.optional(s.backoffUntil)),
            ("sid", JSONText.optional(s.claims.sid)), ("email", JSONText.optional(s.claims.email)),
            ("auth_time", RFC3339.optional(s.claims.authTime)),
            ("access_expires_at", s.accessNeverExpires ? "null" : RFC3339.optional(s.accessExpiresAt)),
            ("next_refresh_at", RFC3339.optional(s.nextRefreshAt)), ("refresh_mode", JSONText.optional(s.refreshMode)),
            ("version", String(s.version)),
            ("failure_count", String(s.failureCount)), ("last_error", JSONText.optional(s.lastError)),
            ("granted_at", RFC3339.optional(s.grantedAt)), ("grant_expires_at", RFC3339.optional(s.grantExpiresAt)),
            ("metadata", s.metadata ?? "null"),
            // The client certificate the access token is bound to (RFC 8705 §3), if any.
            ("access_token_x5t#S256", JSONText.optional(s.certificateBinding)),
            ("created_at", RFC3339.optional(s.createdAt)),
            ("last_used_at", RFC3339.optional(s.lastUsedAt)), ("last_refreshed_at", RFC3339.optional(s.lastRefreshedAt)),
        ]
    }

    /// The key listing: what each key reaches, when it was made, last used, expires or was
    /// revoked — never a secret or its hash.
    static func apiKeys(_ keys: [APIKeyRecord]) -> String { JSONText.object([("keys", JSONText.array(keys.map(apiKey)))]) }

    static func apiKey(_ k: APIKeyRecord) -> String {
        JSONText.object([
            ("id", JSONText.quote(k.principal.id)), ("name", JSONText.quote(k.principal.name)),
            ("roles", JSONText.strings(k.principal.roles.map(\.rawValue).sorted())), ("tenants", JSONText.strings(k.principal.tenants.sorted())),
            ("created_at", RFC3339.optional(k.createdAt)), ("last_used_at", RFC3339.optional(k.lastUsedAt)),
            ("expires_at", RFC3339.optional(k.principal.expiresAt)), ("revoked_at", RFC3339.optional(k.principal.revokedAt)),
            ("certificate_sha256", k.principal.certificateSHA256.map(JSONText.quote) ?? "null"),
        ])
    }

    /// A revocation's answer: the session now, and whether the IdP confirmed (or offers no
    /// revocation at all).
    static func revocation(_ o: RevocationService.Outcome) -> String {
        let idp = o.pendingAtIdP > 0 ? "pending" : o.unsupportedAtIdP ? "unsupported" : "confirmed"
        var members = sessionMembers(o.after) + [("idp_revocation", JSONText.quote(idp))]
        if let logout = o.idpLogout {
            members += [("idp_logout", JSONText.quote(logout)), ("end_session_url", JSONText.optional(o.endSessionURL)),
                        ("end_session_state", JSONText.optional(o.endSessionState))]
        }
        return JSONText.object(members)
    }

    static func signout(_ j: SignoutJob) -> String {
        let f = j.filter
        return JSONText.object([
            ("job_id", JSONText.quote(j.id)), ("tenant", JSONText.quote(j.tenant)), ("state", JSONText.quote(j.state.rawValue)),
            ("dry_run", j.dryRun ? "true" : "false"),
            ("filter", JSONText.object([("subject", JSONText.optional(f.subject)), ("end_user", JSONText.optional(f.endUser)),
                                        ("client", JSONText.optional(f.client)),
                                        ("created_before", RFC3339.optional(f.createdBefore)), ("idle_since", RFC3339.optional(f.idleSince)),
                                        ("all", f.all ? "true" : "false")])),
            ("total", String(j.total)), ("revoked", String(j.revoked)), ("idp_pending", String(j.idpPending)), ("failed", String(j.failed)),
            ("created_by", JSONText.quote(j.createdBy)), ("created_at", RFC3339.optional(j.createdAt)),
            ("finished_at", RFC3339.optional(j.finishedAt))])
    }

    static func audit(_ r: AuditRecord) -> String {
        let e = r.event
        return JSONText.object([
            ("id", String(r.id)), ("at", RFC3339.optional(e.at)), ("last_at", RFC3339.optional(r.lastAt)), ("count", String(r.count)),
            ("actor", JSONText.quote(e.actor)), ("action", JSONText.quote(e.action.rawValue)), ("session_id", JSONText.optional(e.session)),
            ("outcome", JSONText.quote(e.outcome))] + (e.client.map { [("client", JSONText.quote($0))] } ?? []))
    }

    static func tenant(_ t: Tenant) -> String {
        JSONText.object([("id", JSONText.quote(t.id)), ("name", JSONText.quote(t.name)), ("disabled", t.disabled ? "true" : "false"),
                         ("created_at", RFC3339.optional(t.createdAt))])
    }

    /// A retention pass: `{"deleted": {kind: n}, "kept_days": {kind: days or null}}`.
    static func retention(_ deleted: [RetentionKind: Int], ages: [RetentionKind: TimeInterval]) -> String {
        JSONText.object([
            ("deleted", JSONText.object(RetentionKind.allCases.map { ($0.rawValue, String(deleted[$0] ?? 0)) })),
            ("kept_days", JSONText.object(RetentionKind.allCases.map { ($0.rawValue, ages[$0].map { String(Int($0 / 86_400)) } ?? "null") })),
        ])
    }

    static func client(_ v: OperatorService.ClientView) -> String {
        let c = v.client, p = c.refreshPolicy
        var assertion: [(String, String)] = []
        if let alg = c.assertionAlgorithm { assertion.append(("assertion_alg", JSONText.quote(alg.rawValue))) }
        if let k = v.publicKey {
            // The public half of the broker's private_key_jwt key, to register at the IdP.
            let members = k.members.sorted { $0.key < $1.key }.map { ($0.key, JSONText.quote($0.value)) }
            assertion.append(("jwks", JSONText.object([("keys", "[" + JSONText.object(members) + "]")])))
        }
        return JSONText.object([
            ("tenant", JSONText.quote(c.tenant)), ("id", JSONText.quote(c.id)), ("issuer", JSONText.quote(c.issuer)),
            ("client_id", JSONText.quote(c.clientID)), ("auth_method", JSONText.quote(c.authMethod.rawValue)),
            ("has_secret", c.authMethod.needsSecret ? "true" : "false"), ("redirect_uri", JSONText.quote(c.redirectURI)),
            ("scopes", JSONText.strings(c.scopes)), ("redirect_after_allowed", JSONText.strings(c.redirectAfterAllowed)),
            ("refresh_policy", JSONText.object([
                ("lead_seconds", p.leadSeconds.map { String(Int($0)) } ?? "null"), ("lead_fraction", String(p.leadFraction)),
                ("lead_cap_seconds", String(Int(p.leadCap))), ("jitter_seconds", String(Int(p.jitterSeconds))),
                ("min_ttl", String(Int(p.minTTL))), ("idle_after_seconds", p.idleAfter.map { String(Int($0)) } ?? "null"),
                ("keepalive_every_seconds", String(Int(p.keepaliveEvery))), ("grant_lifetime_seconds", String(Int(p.grantLifetime))),
                ("grant_lifetime_rolling", p.grantLifetimeRolling ? "true" : "false")])),
            ("max_concurrent_refreshes", String(c.maxConcurrentRefreshes)),
            ("on_ambiguous_refresh", JSONText.quote(c.onAmbiguousRefresh.rawValue)),
            ("dpop", c.dpopAlgorithm == nil ? "false" : "true"), ("dpop_alg", JSONText.optional(c.dpopAlgorithm?.rawValue)),
            ("profile", JSONText.quote(c.profile.rawValue)), ("trust_anchors", JSONText.optional(c.trustAnchors)),
            // The provider: the catalogue entry, and the descriptor in force (null: an OpenID provider by discovery).
            ("protocol", JSONText.quote(c.descriptor.kind.rawValue)), ("provider", JSONText.optional(c.provider)),
            ("descriptor", c.descriptor == .openID ? "null" : c.descriptor.json),
            // The outbound proxy's upstream: as registered, and in force (the descriptor's filling what is unset).
            ("upstream", c.upstream?.json ?? "null"), ("upstream_in_force", c.effectiveUpstream?.json ?? "null"),
            // The TLS client certificate (RFC 8705): what identifies it, never the chain or key.
            ("tls_client_certificate", c.tlsClientCertificate.map { t in
                JSONText.object([("x5t#S256", JSONText.quote(t.thumbprint)), ("subject", JSONText.quote(t.subject)),
                                 ("not_after", RFC3339.optional(t.notAfter))])
            } ?? "null"),
            ("hand_out_certificate_bound", c.handOutCertificateBound ? "true" : "false"),
        ] + assertion)
    }
}
