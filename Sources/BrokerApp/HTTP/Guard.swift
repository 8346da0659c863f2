import BrokerCore
import BrokerHTTP

extension BrokerRuntime {
    /// Authenticates the request's API key and checks its role in `tenant` before running
    /// `body`; any error thrown on the way becomes its JSON response. A key the authenticator
    /// does not hold in memory is looked up on a worker thread, never on the HTTP thread.
    func guarded(_ req: HTTPRequest, _ role: Role, tenant: String?, _ body: @escaping @Sendable (Principal) throws -> HTTPReply) -> HTTPReply {
        let header = req.header("authorization")
        let run: @Sendable (Result<Principal, BrokerError>) -> HTTPReply = { known in
            let p: Principal
            switch known {
            case .success(let found): p = found
            case .failure(let e): return .now(ErrorResponse.response(e, requestID: req.requestID))
            }
            // The request's log line names the key that made it (its id, never the key).
            @Sendable func named(_ r: HTTPResponse) -> HTTPResponse {
                var r = r
                r.logFields.append(("key_id", p.id))
                return r
            }
            do {
                if let refusal = p.authorize(role, tenant: tenant) { throw refusal }
                switch try body(p) {
                case .now(let r): return .now(named(r))
                case .later(let work): return .later { respond in work { respond(named($0)) } }
                }
            } catch {
                return .now(named(ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID)))
            }
        }
        // A bearer key when one is sent; else the verified client certificate of an mTLS listener.
        let certificate = header == nil ? req.clientCertificateSHA256 : nil
        if let certificate {
            if let known = auth.cached(certificate: certificate, now: clock.now()) { return run(known) }
        } else if let known = auth.cached(header, now: clock.now()) {
            return run(known)
        }
        return .later { [executor, auth, clock] respond in
            executor.submit {
                let known = Result {
                    try certificate.map { try auth.authenticate(certificate: $0, now: clock.now()) } ?? auth.authenticate(header, now: clock.now())
                }.mapError { ($0 as? BrokerError) ?? .internalError }
                switch run(known) {
                case .now(let r): respond(r)
                case .later(let answer): answer(respond)
                }
            }
        }
    }

    /// Runs blocking `work` on the executor and answers with its result: one hop per request
    /// (after an API-key lookup on the executor, the work runs on the same thread).
    func later(_ req: HTTPRequest, _ work: @escaping @Sendable () throws -> HTTPResponse) -> HTTPReply {
        let trace = req.trace
        return .later { [executor] respond in
            executor.run {
                do { respond(try CurrentTrace.with(trace, work)) } catch {
                    respond(ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID))
                }
            }
        }
    }
}
