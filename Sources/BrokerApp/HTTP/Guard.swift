import BrokerCore
import BrokerHTTP

extension BrokerRuntime {
    /// Authenticates the request's API key and checks its role in `tenant` before running
    /// `body`; any error thrown on the way becomes its JSON response.
    func guarded(_ req: HTTPRequest, _ role: Role, tenant: String?, _ body: (Principal) throws -> HTTPReply) -> HTTPReply {
        do {
            let p = try auth.authenticate(req.header("authorization"), now: clock.now())
            if let refusal = p.authorize(role, tenant: tenant) { throw refusal }
            return try body(p)
        } catch {
            return .now(ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID))
        }
    }

    /// Runs blocking `work` on the executor and answers with its result.
    func later(_ req: HTTPRequest, _ work: @escaping @Sendable () throws -> HTTPResponse) -> HTTPReply {
        .later { [executor] respond in
            executor.submit {
                do { respond(try work()) } catch {
                    respond(ErrorResponse.response((error as? BrokerError) ?? .internalError, requestID: req.requestID))
                }
            }
        }
    }
}
