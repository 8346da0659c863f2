import Broker
import BrokerCore
import BrokerHTTP

/// Guard checks a request's credentials before its route runs, and runs blocking work off the
/// HTTP threads: what every route holds besides the few services it calls.
struct Guard: Sendable {
    let auth: Authenticator
    let clock: any Clock
    let executor: BlockingExecutor

    /// What the request's credentials allow, when that is known without a lookup.
    enum Access {
        /// The key (or client certificate) is held in memory and may act in the tenant.
        case allowed(Principal)
        /// Refused (unknown, wrong or revoked key; another tenant; a role it lacks): the answer.
        case refused(HTTPResponse)
        /// Not held in memory: `guarded` looks it up on a worker thread.
        case lookup
    }

    /// The request's principal if its API key (or verified client certificate) is held in
    /// memory and has `role` in `tenant`. A hot route answers `.allowed` through `answer` with
    /// no closure kept; `guarded` does the rest.
    func access(_ req: HTTPRequest, _ role: Role, tenant: String?) -> Access {
        let header = req.header("authorization")
        // A bearer key when one is sent; else the verified client certificate of an mTLS listener.
        let now = clock.now()
        let known: Result<Principal, BrokerError>?
        if header == nil, let certificate = req.clientCertificateSHA256 {
            known = auth.cached(certificate: certificate, now: now)
        } else {
            known = auth.cached(header, now: now)   // no header: refused here, never looked up
        }
        switch known {
        case nil: return .lookup
        case .failure(let e)?: return .refused(ErrorResponse.response(e, requestID: req.requestID))
        case .success(let p)?: return Self.refusal(req, p, role, tenant: tenant).map { .refused($0) } ?? .allowed(p)
        }
    }

    /// The answer to a known principal that lacks `role` in `tenant` (its log line names the
    /// key), or nil when it may act there.
    private static func refusal(_ req: HTTPRequest, _ p: Principal, _ role: Role, tenant: String?) -> HTTPResponse? {
        guard let refusal = p.authorize(role, tenant: tenant) else { return nil }
        var r = ErrorResponse.response(refusal, requestID: req.requestID)
        r.caller = p.id
        return r
    }

    /// Authenticates the request's API key and checks its role in `tenant` before running
    /// `body`; any error thrown on the way becomes its JSON response. A key the authenticator
    /// does not hold in memory is looked up on a worker thread, never on the HTTP thread.
    func guarded(_ req: HTTPRequest, _ role: Role, tenant: String?, _ body: @escaping @Sendable (Principal) throws -> HTTPReply) -> HTTPReply {
        switch access(req, role, tenant: tenant) {
        case .allowed(let p): return Self.answer(req, p, body)
        case .refused(let r): return .now(r)
        case .lookup: return lookUp(req, role, tenant: tenant, body)
        }
    }

    /// For `.lookup` (a key `access` found no trace of in memory): authenticates on a worker
    /// thread, then checks the role and runs `body` as `guarded` does.
    func lookUp(_ req: HTTPRequest, _ role: Role, tenant: String?, _ body: @escaping @Sendable (Principal) throws -> HTTPReply) -> HTTPReply {
        let header = req.header("authorization")
        let certificate = header == nil ? req.clientCertificateSHA256 : nil
        return .later { [executor, auth, clock] respond in
            executor.submit {
                let reply: HTTPReply
                do {
                    let p = try certificate.map { try auth.authenticate(certificate: $0, now: clock.now()) } ?? auth.authenticate(header, now: clock.now())
                    reply = Self.refusal(req, p, role, tenant: tenant).map { .now($0) } ?? Self.answer(req, p, body)
                } catch {
                    reply = .now(ErrorResponse.response(to: error, requestID: req.requestID))
                }
                switch reply {
                case .now(let r): respond(r)
                case .later(let answer): answer(respond)
                }
            }
        }
    }

    /// Runs `body` for an allowed principal; any error thrown becomes its JSON response. The
    /// request's log line names the key that made it (its id, never the key).
    static func answer(_ req: HTTPRequest, _ p: Principal, _ body: (Principal) throws -> HTTPReply) -> HTTPReply {
        do {
            switch try body(p) {
            case .now(var r):
                r.caller = p.id
                return .now(r)
            case .later(let work):
                let id = p.id
                return .later { respond in
                    work { r in
                        var r = r
                        r.caller = id
                        respond(r)
                    }
                }
            }
        } catch {
            var r = ErrorResponse.response(to: error, requestID: req.requestID)
            r.caller = p.id
            return .now(r)
        }
    }

    /// Runs blocking `work` on the executor and answers with its result: one hop per request
    /// (after an API-key lookup on the executor, the work runs on the same thread).
    func later(_ req: HTTPRequest, _ work: @escaping @Sendable () throws -> HTTPResponse) -> HTTPReply {
        let trace = req.trace
        return .later { [executor] respond in
            executor.run {
                do { respond(try CurrentTrace.with(trace, work)) } catch {
                    respond(ErrorResponse.response(to: error, requestID: req.requestID))
                }
            }
        }
    }
}
