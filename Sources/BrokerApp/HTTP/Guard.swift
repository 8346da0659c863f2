import BrokerCore
import BrokerHTTP

extension BrokerRuntime {
    /// Authenticates the request's API key and checks its role in `tenant` before running
    /// `body`; any error thrown on the way becomes its JSON response. A key the authenticator
    /// does not hold in memory is looked up on a worker thread, never on the HTTP thread.
    func guarded(_ req: HTTPRequest, _ role: Role, tenant: String?, _ body: @escaping @Sendable (Principal) throws -> HTTPReply) -> HTTPReply {
        let header = req.header("authorization")
        // A bearer key when one is sent; else the verified client certificate of an mTLS listener.
        let certificate = header == nil ? req.clientCertificateSHA256 : nil
        let now = clock.now()
        if let certificate {
            if let known = auth.cached(certificate: certificate, now: now) { return Self.run(req, role, tenant, known, body) }
        } else if let known = auth.cached(header, now: now) {
            return Self.run(req, role, tenant, known, body)
        }
        return .later { [executor, auth, clock] respond in
            executor.submit {
                let known = Result {
                    try certificate.map { try auth.authenticate(certificate: $0, now: clock.now()) } ?? auth.authenticate(header, now: clock.now())
                }.mapError { ($0 as? BrokerError) ?? .internalError }
                switch Self.run(req, role, tenant, known, body) {
                case .now(let r): respond(r)
                case .later(let answer): answer(respond)
                }
            }
        }
    }

    /// Checks the key's role in `tenant` and runs `body` for it; any error thrown on the way
    /// becomes its JSON response. The request's log line names the key that made it (its id,
    /// never the key).
    private static func run(_ req: HTTPRequest, _ role: Role, _ tenant: String?, _ known: borrowing Result<Principal, BrokerError>,
                            _ body: @Sendable (Principal) throws -> HTTPReply) -> HTTPReply {
        let p: Principal
        switch known {
        case .success(let found): p = found
        case .failure(let e): return .now(ErrorResponse.response(e, requestID: req.requestID))
        }
        do {
            if let refusal = p.authorize(role, tenant: tenant) { throw refusal }
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
            var r = ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID)
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
                    respond(ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID))
                }
            }
        }
    }
}
