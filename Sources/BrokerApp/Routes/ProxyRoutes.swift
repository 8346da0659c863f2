import Broker
import BrokerCore
import BrokerHTTP

/// The outbound proxy (role proxy): a worker's API call, any method, sent to the client's
/// upstream with the credentials the broker holds. Streamed both ways: the body is forwarded as
/// it arrives, the upstream's answer passed on as it comes.
struct ProxyRoutes {
    let gate: Guard
    let proxy: ProxyService
    let maxBodyBytes: Int

    /// The header naming the session's user at the provider (`subject` routes).
    static let subjectHeader = "tokenbroker-subject"
    /// The header naming the application's own id of the user (`end-user` routes).
    static let endUserHeader = "tokenbroker-end-user"

    func register(_ r: inout Router) {
        r.addStream("/v1/tenants/{t}/proxy/sessions/{s}/{rest*}", maxBodyBytes: maxBodyBytes) { req in
            forward(req, prefix: 6) { .success(.session($0[param: "s"])) }
        }
        r.addStream("/v1/tenants/{t}/proxy/clients/{c}/app/{rest*}", maxBodyBytes: maxBodyBytes) { req in
            forward(req, prefix: 7) { .success(.app(client: $0[param: "c"])) }
        }
        r.addStream("/v1/tenants/{t}/proxy/clients/{c}/subject/{rest*}", maxBodyBytes: maxBodyBytes) { req in
            forward(req, prefix: 7) { req in
                Self.named(req, Self.subjectHeader).map { .subject(client: req[param: "c"], subject: $0) }
            }
        }
        r.addStream("/v1/tenants/{t}/proxy/clients/{c}/end-user/{rest*}", maxBodyBytes: maxBodyBytes) { req in
            forward(req, prefix: 7) { req in
                Self.named(req, Self.endUserHeader).map { .endUser(client: req[param: "c"], endUser: $0) }
            }
        }
    }

    /// The selector header's value: required, 1...1024 bytes.
    static func named(_ req: HTTPRequest, _ header: String) -> Result<String, BrokerError> {
        guard let v = req.header(header), (1...1024).contains(v.utf8.count) else {
            return .failure(.badRequest(code: "invalid_request", message: "the '\(header)' header is required (1...1024 bytes)"))
        }
        return .success(v)
    }

    /// `prefix`: the path segments before the tail, which is taken from the raw target (its
    /// percent-encoding kept, as the upstream must receive it).
    private func forward(_ req: HTTPRequest, prefix: Int, _ target: @escaping @Sendable (HTTPRequest) -> Result<ProxyTarget, BrokerError>) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .proxy, tenant: tenant) { [proxy] p in
            let (tail, query) = Self.split(req.rawTarget, dropping: prefix)
            let call = ProxyCall(tenant: tenant, target: try target(req).get(), method: req.method, tail: tail, query: query,
                                 headers: req.allHeaders, body: req.bodyStream)
            return .later { respond in
                proxy.forward(call, by: p) { answer in
                    switch answer {
                    case .refused(let e):
                        respond(ErrorResponse.response(e, requestID: req.requestID))
                        return nil
                    case .head(let status, let headers, let length?) where length <= CollectedResponse.limit:
                        return CollectedResponse(status: status, headers: headers, length: length, requestID: req.requestID, respond: respond)
                    case .head(let status, let headers, let length):
                        let pipe = ResponseBodyPipe(length: length)
                        respond(.streamed(status, headers: headers, pipe: pipe))
                        return pipe
                    }
                }
            }
        }
    }

    /// The raw target's path after its first `dropping` segments, and its raw query (bytes
    /// scanned once: this runs for every proxied call).
    static func split(_ rawTarget: String, dropping n: Int) -> (tail: String, query: String?) {
        let u = rawTarget.utf8
        var slashes = 0
        var tailStart = u.endIndex, queryMark: String.Index?
        for i in u.indices {
            let b = u[i]
            if b == UInt8(ascii: "?") { queryMark = i; break }
            if b == UInt8(ascii: "/"), tailStart == u.endIndex {
                slashes += 1
                if slashes == n + 1 { tailStart = u.index(after: i) }
            }
        }
        let pathEnd = queryMark ?? u.endIndex
        let tail = tailStart < pathEnd ? String(rawTarget[tailStart..<pathEnd]) : ""
        return (tail, queryMark.map { String(rawTarget[rawTarget.index(after: $0)...]) })
    }
}
