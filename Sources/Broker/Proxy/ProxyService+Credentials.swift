import BrokerCore
import Synchronization
import Foundation

// The credentials of a proxied call: the token found for its target, the Authorization (and
// DPoP proof) of each request sent, and the renewal after an upstream refused the token.
extension ProxyService {
    /// The token the call carries: its session's (the token path decides as for a hand-out,
    /// refreshing when it must; nothing is audited as handed out) or the client's app token.
    func credentialFor(_ call: ProxyCall, _ principal: Principal) -> Result<ProxyCredential, BrokerError> {
        let target: TokenTarget
        switch call.target {
        case .app(let client):
            let ask = AppTokenAsk(scopes: [], audience: nil, resource: nil)
            do {
                let t = try appTokens.token(tenant: call.tenant, client: client, ask: ask, minTTL: nil, presentedByBroker: true,
                                            actor: Self.actor(principal))
                return .success(ProxyCredential(token: t.accessToken, type: t.tokenType, client: client, session: nil, metadata: nil,
                                                ask: ask, version: t.version))
            } catch {
                return .failure(error)
            }
        case .session(let id): target = .session(id)
        case .subject(let client, let subject): target = .subject(client: client, subject: subject)
        case .endUser(let client, let endUser): target = .endUser(client: client, endUser: endUser)
        }
        var request = TokenRequest()
        request.audited = false
        request.presentedByBroker = true
        return wait { [tokens] done in
            switch tokens.handOut(by: principal, tenant: call.tenant, target: target, request: request) {
            case .now(let r): done(r)
            case .later(let start): start(done)
            }
        }.map { t in
            ProxyCredential(token: t.accessToken, type: t.tokenType, client: t.client, session: t.sessionID, metadata: t.metadata,
                            ask: nil, version: nil)
        }
    }

    /// A new token after the upstream refused `credential`'s: nil when it was renewed (or was
    /// already replaced elsewhere), else why not.
    func renew(_ credential: inout ProxyCredential, _ tenant: String, _ principal: Principal) -> BrokerError? {
        let outcome: Result<(String, TokenType, Int64?), BrokerError>
        if let session = credential.session {
            var request = TokenRequest()
            request.audited = false
            request.presentedByBroker = true
            let rejected = credential.token
            outcome = wait { [tokens] done in
                tokens.replacing(rejected, by: principal, tenant: tenant, session: session, request: request, completion: done)
            }.map { ($0.accessToken, $0.tokenType, nil) }
        } else if let ask = credential.ask, let version = credential.version {
            do {
                let t = try appTokens.renew(tenant: tenant, client: credential.client, ask: ask, ifStill: version, actor: Self.actor(principal))
                outcome = .success((t.accessToken, t.tokenType, t.version))
            } catch {
                outcome = .failure(error)
            }
        } else {
            outcome = .failure(.internalError)
        }
        switch outcome {
        case .success(let (token, type, version)):
            metrics.refreshesAfter401.add("ok")
            credential.token = token
            credential.type = type
            credential.version = version
            return nil
        case .failure(let e):
            metrics.refreshesAfter401.add("failed")
            return e
        }
    }

    /// The headers that carry the credential on one request: `Authorization: Bearer` (RFC 6750
    /// §2.1), or `Authorization: DPoP` with a fresh proof bound to this method and URL (RFC 9449 §7).
    /// An app token's proof comes with the token it is bound to (the stored one may have been
    /// renewed meanwhile: the credential follows it).
    func authorization(_ c: inout ProxyCredential, _ tenant: String, _ send: ProxyMachine.Send,
                       _ principal: Principal) -> Result<[(name: String, value: String)], BrokerError> {
        guard c.type == .dpop else { return .success([("Authorization", "Bearer " + c.token)]) }
        let target: DPoPTarget
        do { target = try DPoPTarget(method: send.method, uri: send.url, nonce: send.nonce) } catch {
            return .failure(.badRequest(code: "invalid_upstream_path", message: error.reason))
        }
        let proof: Result<String, BrokerError>
        if let session = c.session {
            proof = tokens.proof(tenant: tenant, session: session, token: c.token, for: target)
        } else if let ask = c.ask {
            do {
                let t = try appTokens.token(tenant: tenant, client: c.client, ask: ask, minTTL: nil, dpop: [target], presentedByBroker: true,
                                            actor: Self.actor(principal))
                (c.token, c.type, c.version) = (t.accessToken, t.tokenType, t.version)
                proof = t.dpopProofs.first.map { .success($0) } ?? .failure(.internalError)
            } catch {
                proof = .failure(error)
            }
        } else {
            proof = .failure(.internalError)
        }
        return proof.map { [("Authorization", "DPoP " + c.token), ("DPoP", $0)] }
    }

    /// Who an app token is used by, in the audit trail: the proxy, for the calling key (which
    /// never receives it).
    static func actor(_ p: Principal) -> String { "proxy:" + p.id }

    /// Starts `work` and blocks this proxy thread until it completes.
    func wait<T: Sendable>(_ work: (@escaping @Sendable (Result<T, BrokerError>) -> Void) -> Void) -> Result<T, BrokerError> {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<T, BrokerError>?>(nil)
        work { r in
            box.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 } ?? .failure(.internalError)
    }
}
