import Broker
import BrokerCore
import BrokerHTTP

/// The worker token API (spec §4.1).
struct TokenRoutes {
    let runtime: BrokerRuntime

    struct Body: Decodable {
        var minTTL: Int?
        var scope: String?
        var forceRefresh: Bool?
        var subject: String?
        var client: String?
        var items: [Item]?

        struct Item: Decodable {
            var sessionID: String?
            var subject: String?
            var client: String?
            enum CodingKeys: String, CodingKey { case sessionID = "session_id", subject, client }
        }

        enum CodingKeys: String, CodingKey {
            case minTTL = "min_ttl", scope, forceRefresh = "force_refresh", subject, client, items
        }

        func request() throws -> TokenRequest {
            if let m = minTTL, !(0...86_400).contains(m) {
                throw BrokerError.badRequest(code: "invalid_request", message: "'min_ttl' must be 0...86400 seconds")
            }
            return TokenRequest(minTTL: minTTL.map(Double.init), scopes: Scopes.parse(scope), forceRefresh: forceRefresh ?? false)
        }
    }

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/sessions/{id}/token") { req in
            serve(req) { _ in .session(req[param: "id"]) }
        }
        r.add("POST", "/v1/tenants/{t}/token") { req in
            serve(req) { body in
                guard let s = body.subject, !s.isEmpty, let c = body.client, !c.isEmpty else {
                    throw BrokerError.badRequest(code: "invalid_request", message: "'subject' and 'client' are required")
                }
                return .subject(client: c, subject: s)
            }
        }
        r.add("POST", "/v1/tenants/{t}/tokens:batch", batch)
    }

    private func serve(_ req: HTTPRequest, _ target: @escaping (Body) throws -> TokenTarget) -> HTTPReply {
        let tenant = req[param: "t"]
        return runtime.guarded(req, .worker, tenant: tenant) { principal in
            let body = try RequestBody.decode(Body.self, from: req)
            let request = try body.request()
            let t = try target(body)
            let tokens = runtime.tokens
            if let r = tokens.cachedToken(by: principal, tenant: tenant, target: t, request: request) {
                return .now(Render.tokenResult(r, requestID: req.requestID))
            }
            return .later { respond in
                tokens.token(by: principal, tenant: tenant, target: t, request: request) { respond(Render.tokenResult($0, requestID: req.requestID)) }
            }
        }
    }

    static let maxBatch = 1000

    private func batch(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return runtime.guarded(req, .worker, tenant: tenant) { principal in
            let body = try RequestBody.decode(Body.self, from: req)
            let request = try body.request()
            guard let items = body.items, (1...Self.maxBatch).contains(items.count) else {
                throw BrokerError.badRequest(code: "invalid_request", message: "'items' must hold 1...\(Self.maxBatch) entries")
            }
            // Items that name nothing usable are answered here; the rest go to the service.
            var refused: [Int: BrokerError] = [:]
            var targets: [TokenTarget] = []
            var placed: [Int] = []
            for (i, item) in items.enumerated() {
                if let id = item.sessionID, !id.isEmpty, item.subject == nil {
                    targets.append(.session(id))
                    placed.append(i)
                } else if item.sessionID == nil, let s = item.subject, !s.isEmpty, let c = item.client, !c.isEmpty {
                    targets.append(.subject(client: c, subject: s))
                    placed.append(i)
                } else {
                    refused[i] = .badRequest(code: "invalid_request", message: "an item names either 'session_id', or 'subject' and 'client'")
                }
            }
            let count = items.count
            let (positions, invalid) = (placed, refused)
            let render: @Sendable ([Result<IssuedToken, BrokerError>]) -> HTTPResponse = { results in
                var all = [Result<IssuedToken, BrokerError>?](repeating: nil, count: count)
                for (p, r) in zip(positions, results) { all[p] = r }
                for (i, e) in invalid { all[i] = .failure(e) }
                let docs = all.enumerated().map { i, r -> String in
                    switch r! {
                    case .success(let t): return JSONText.object([("index", String(i)), ("status", "200")] + Render.token(t))
                    case .failure(let e):
                        return JSONText.object([("index", String(i)), ("status", String(ErrorResponse.status(e)))] + ErrorResponse.members(e))
                    }
                }
                return HTTPResponse.json(200, "{\"results\":" + JSONText.array(docs) + "}")
            }
            if targets.isEmpty { return .now(render([])) }
            let tokens = runtime.tokens
            let box = ResponseBox()
            if let done = tokens.batch(by: principal, tenant: tenant, targets: targets, request: request, completion: { box.deliver(render($0)) }) {
                return .now(render(done))
            }
            return .later { respond in box.wait(respond) }
        }
    }
}
