import BrokerCore
import Foundation

// What the outbound proxy asks of the token path beyond a hand-out: a DPoP proof for each
// request it sends, and a new token after an upstream refused the one it sent.
extension TokenService {
    /// A DPoP proof (RFC 9449 §7) of session `id`'s key for one request carrying `token`.
    /// Blocking (the session may be read): call it on a worker thread.
    public func proof(tenant: String, session id: String, token: String, for target: DPoPTarget) -> Result<String, BrokerError> {
        let now = clock.now()
        let key = SessionKey(tenant: tenant, id: id)
        let held: Session?
        if let s = cache.get(key, now: now) { held = s } else {
            do { held = try store.session(tenant: tenant, id: id) } catch { return .failure(refresher.brokerError(error, doing: "a DPoP proof")) }
        }
        guard let held else { return .failure(.notFound("session")) }
        guard let keys = dpopKeys else { return .failure(.internalError) }
        return keys.proofs([target], token: token, type: .dpop, key: held.dpopKey, now: now).map { $0[0] }
    }

    /// After an upstream answered that `rejected` is not a valid token (RFC 6750 §3.1
    /// `invalid_token`): the session's token if it holds another by now (a refresh elsewhere
    /// already replaced it), else a forced refresh. The refresh is single-flight with every
    /// other of the session, on every replica: the flight refreshes only while the row is still
    /// at the version read here, so callers that saw the same refused token cause one refresh.
    /// `completion` runs exactly once, on some thread.
    public func replacing(_ rejected: String, by principal: Principal, tenant: String, session id: String, request: TokenRequest,
                          completion: @escaping Completion) {
        let until = deadline()
        executor.submit { [self] in
            let now = clock.now()
            do {
                let key = SessionKey(tenant: tenant, id: id)
                let found: Session?
                if let s = cache.get(key, now: now) { found = s } else { found = try store.session(tenant: tenant, id: id) }
                guard let session = found else { throw BrokerError.notFound("session") }
                guard let client = try registry.client(tenant: tenant, id: session.client, now: now) else { throw BrokerError.notFound("client") }
                if session.accessToken != rejected {
                    return answer(session, client, principal: principal, request: request, attempt: 0, until: until, completion: completion)
                }
                var forced = request
                forced.forceRefresh = true
                let need = forced.requirement(policy: client.refreshPolicy, lifetime: session.accessLifetime, bound: forced.boundRule(for: client))
                awaitRefresh(session, client, need, principal: principal, request: forced, attempt: 0, until: until, completion: completion)
            } catch {
                completion(finish(.failure(refresher.brokerError(error, doing: "a token request")), principal, tenant, id, now,
                                  audited: request.audited))
            }
        }
    }
}
