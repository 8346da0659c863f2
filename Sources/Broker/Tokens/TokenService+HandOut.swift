import Foundation
import BrokerCore

extension TokenService {
    /// The token handed out for a session that passed the decision: expiry to the millisecond,
    /// `expires_in` rounded down so that it never promises more than is left, and `promised`
    /// the life it was handed out with (the request's min_ttl); with a DPoP proof bound to it
    /// (`ath`) for each target the worker named (DPoPKeys.proofs: none for a bearer token).
    /// A plain token carries `memo`, where its rendered document is kept (a cache entry's).
    func issue(_ s: Session, now: Date, _ request: TokenRequest, promised: TimeInterval,
               memo: TokenDocumentMemo? = nil) -> Result<IssuedToken, BrokerError> {
        let exp = s.accessExpiresAt ?? now
        var t = IssuedToken(accessToken: s.accessToken ?? "", tokenType: s.accessTokenType, expiresAt: exp,
                            expiresIn: max(0, Int(exp.timeIntervalSince(now).rounded(.down))), scope: s.scopes,
                            sessionID: s.id, subject: s.subject, endUser: s.endUser)
        t.metadata = s.metadata
        t.client = s.client
        t.promised = promised
        guard !request.dpop.isEmpty else {
            // The memo holds a document whose only moving member is expires_in: never one whose
            // expires_at would be `now`.
            if s.accessExpiresAt != nil { t.memo = memo }
            return .success(t)
        }
        guard let keys = dpopKeys else { return .failure(.internalError) }
        return keys.proofs(request.dpop, token: t.accessToken, type: t.tokenType, key: s.dpopKey, now: now).map { proofs in
            t.dpopProofs = proofs
            return t
        }
    }

    /// Audits the hand-out or refusal, counts it, and passes the result through.
    @discardableResult
    func finish(_ r: Result<IssuedToken, BrokerError>, _ principal: Principal, _ tenant: String, _ session: String?,
                _ now: Date, refreshed: Bool = false, audited: Bool = true) -> Result<IssuedToken, BrokerError> {
        var log: HandOutLog? = nil
        return finish(r, principal, tenant, session, now, refreshed: refreshed, audited: audited, into: &log)
    }

    /// The same; with a `log` (a batch), the audit event and the usage mark are collected there
    /// and recorded with the batch's others.
    func finish(_ r: Result<IssuedToken, BrokerError>, _ principal: Principal, _ tenant: String, _ session: String?,
                _ now: Date, refreshed: Bool = false, audited: Bool = true, into log: inout HandOutLog?) -> Result<IssuedToken, BrokerError> {
        let outcome: String
        switch r {
        case .success(let t):
            outcome = refreshed ? "refreshed" : "cached"
            if let session {
                let key = SessionKey(tenant: tenant, id: session)
                if log == nil { usage.record(key, at: now) } else { log?.used.append(key) }
            }
            if audited { audit.recordProofs(t, actor: principal.id, tenant: tenant, at: now) }
        case .failure(let e):
            outcome = e.code
        }
        if outcome == "cached" { metrics.cachedHandOuts.add() } else { metrics.tokenRequests.add(outcome) }
        guard audited else { return r }
        let event = AuditEvent(at: now, actor: principal.id, action: .tokenIssue, tenant: tenant, session: session, outcome: outcome)
        if log == nil { audit.record(event) } else { log?.events.append(event) }
        return r
    }
}
