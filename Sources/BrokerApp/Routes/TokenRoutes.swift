import Broker
import BrokerCore
import BrokerHTTP
import BrokerJSON
import Foundation

/// The worker token API.
struct TokenRoutes {
    let gate: Guard
    let tokens: TokenService
    let exchanges: ExchangeService

    /// The token request body: `min_ttl`, `scope`, `force_refresh`, `dpop` (one target or
    /// several, each `htm`, `htu`, `nonce`); `client` with `subject` or `end_user` for a
    /// lookup; `items` for a batch.
    struct Body {
        let json: JSONObject

        init(_ bytes: [UInt8]) throws { json = try JSONObject.parse(bytes) }

        func request() throws -> TokenRequest {
            let minTTL = try json.int("min_ttl")
            if let m = minTTL, !(0...86_400).contains(m) {
                throw BrokerError.badRequest(code: "invalid_request", message: "'min_ttl' must be 0...86400 seconds")
            }
            let dpop = try Self.dpop(json)
            return TokenRequest(minTTL: minTTL.map(Double.init), scopes: Scopes.parse(try json.string("scope")),
                                forceRefresh: try json.bool("force_refresh") ?? false, dpop: dpop)
        }

        /// `dpop`: one request to prove for or several (RFC 9449 §7), each `htm`, `htu`,
        /// `nonce`; none when absent. The app-token route reads the same member.
        static func dpop(_ json: JSONObject) throws -> [DPoPTarget] {
            let asked = try json.objectOrObjects("dpop")
            guard asked.map({ (1...TokenRequest.maxProofs).contains($0.count) }) ?? true else {
                throw BrokerError.badRequest(code: "invalid_request", message: "'dpop' must name 1...\(TokenRequest.maxProofs) requests")
            }
            return try (asked ?? []).map { t throws -> DPoPTarget in
                let (m, u, n) = (try t.requiredString("htm"), try t.requiredString("htu"), try t.string("nonce"))
                do throws(DPoPTarget.Invalid) { return try DPoPTarget(method: m, uri: u, nonce: n) } catch {
                    throw BrokerError.badRequest(code: "invalid_request", message: error.reason)
                }
            }
        }

        /// The lookup at `client`: by the provider's `subject` or by the application's
        /// `end_user`, exactly one of them.
        func lookup() throws -> TokenTarget {
            let client = try json.requiredString("client")
            guard let endUser = try json.string("end_user") else { return .subject(client: client, subject: try json.requiredString("subject")) }
            guard try json.string("subject") == nil else {
                throw BrokerError.badRequest(code: "invalid_request", message: "name either 'subject' or 'end_user', not both")
            }
            guard EndUser.isValid(endUser) else { throw BrokerError.badRequest(code: "invalid_request", message: EndUser.rule) }
            return .endUser(client: client, endUser: endUser)
        }

        /// `exchange` (RFC 8693): `audience`, `resource` (RFC 8707), `scope`, `act`; nil when absent.
        func exchange() throws -> TokenExchange? {
            guard let x = try json.object("exchange") else { return nil }
            func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }
            let audience = try x.string("audience"), resource = try x.string("resource"), scope = try x.string("scope")
            if let a = audience, !(1...512).contains(a.utf8.count) { throw bad("'exchange.audience' must be 1...512 bytes") }
            if let r = resource {
                // RFC 8707 §2: an absolute URI without a fragment.
                guard r.utf8.count <= 2048, let u = URLComponents(string: r), u.scheme != nil, u.host?.isEmpty == false, u.fragment == nil else {
                    throw bad("'exchange.resource' must be an absolute URI without a fragment")
                }
            }
            let scopes = Scopes.parse(scope)
            guard scopes.count <= 50, scopes.allSatisfy({ $0.utf8.count <= 100 }) else { throw bad("'exchange.scope' must be at most 50 scope tokens") }
            guard audience != nil || resource != nil || !scopes.isEmpty else {
                throw bad("'exchange' names an audience, a resource or a scope: what the new token is narrowed to")
            }
            return TokenExchange(audience: audience, resource: resource, scopes: scopes, act: try x.bool("act") ?? false)
        }
    }

    /// What a single token request's body asks for: parsed once per distinct body (ParseMemo).
    struct Ask: Sendable {
        let request: TokenRequest
        let exchange: TokenExchange?
        /// The lookup by subject or end user the body names on the lookup route (nil on the
        /// by-session route, whose target is in the path).
        let lookup: TokenTarget?

        /// Parses in the order the errors are answered: the request's members, the lookup's,
        /// then `exchange`.
        init(_ bytes: [UInt8], bySubject: Bool) throws {
            let body = try Body(bytes)
            request = try body.request()
            lookup = bySubject ? try body.lookup() : nil
            exchange = try body.exchange()
        }
    }

    private let bySession = ParseMemo<Ask>()
    private let bySubject = ParseMemo<Ask>()

    func register(_ r: inout Router) {
        r.add("POST", "/v1/tenants/{t}/sessions/{id}/token") { req in serve(req, subjectInBody: false) }
        r.add("POST", "/v1/tenants/{t}/token") { req in serve(req, subjectInBody: true) }
        r.add("POST", "/v1/tenants/{t}/tokens:batch", batch)
    }

    /// Answers one token request for the path's session, or for the body's lookup by subject. A
    /// key held in memory is answered here with no closure kept (the cached hand-out is the hot
    /// path); the body is parsed after the key is checked (for callers who may ask, never for
    /// strangers).
    private func serve(_ req: HTTPRequest, subjectInBody: Bool) -> HTTPReply {
        let tenant = req[param: "t"]
        switch gate.access(req, .worker, tenant: tenant) {
        case .allowed(let p): return Guard.answer(req, p) { try handOut(req, tenant: tenant, subjectInBody: subjectInBody, $0) }
        case .refused(let r): return .now(r)
        case .lookup: return gate.lookUp(req, .worker, tenant: tenant) { [self] p in try handOut(req, tenant: tenant, subjectInBody: subjectInBody, p) }
        }
    }

    /// One token request answered for `principal`, whose key may act in `tenant`: from the
    /// cache when it holds a token that serves, else later (a refresh, or an exchange).
    private func handOut(_ req: HTTPRequest, tenant: String, subjectInBody: Bool, _ principal: Principal) throws -> HTTPReply {
        let a = subjectInBody ? try bySubject.value(req.body) { try Ask($0, bySubject: true) }
                              : try bySession.value(req.body) { try Ask($0, bySubject: false) }
        let request = a.request
        guard let t = a.lookup ?? (subjectInBody ? nil : .session(req[param: "id"])) else { throw BrokerError.internalError }
        if let x = a.exchange {
            let exchanges = self.exchanges
            return .later { respond in
                CurrentTrace.with(req.trace) {
                    exchanges.exchange(by: principal, tenant: tenant, target: t, request: request, x) { respond(Render.tokenResult($0, requestID: req.requestID)) }
                }
            }
        }
        switch tokens.handOut(by: principal, tenant: tenant, target: t, request: request) {
        case .now(let r):
            return .now(Render.tokenResult(r, requestID: req.requestID))
        case .later(let start):
            return .later { respond in
                CurrentTrace.with(req.trace) {   // the executor's hop carries it to the IdP call
                    start { respond(Render.tokenResult($0, requestID: req.requestID)) }
                }
            }
        }
    }

    static let maxBatch = 1000

    private func batch(_ req: HTTPRequest) -> HTTPReply {
        let tenant = req[param: "t"]
        return gate.guarded(req, .worker, tenant: tenant) { principal in
            let body = try Body(req.body)
            let request = try body.request()
            guard request.dpop.isEmpty else {
                throw BrokerError.badRequest(code: "invalid_request", message: "a batch mints no DPoP proofs: ask for them per session")
            }
            guard try body.exchange() == nil else {
                throw BrokerError.badRequest(code: "invalid_request", message: "a batch exchanges no tokens: ask per session")
            }
            guard let items = try body.json.objects("items"), (1...Self.maxBatch).contains(items.count) else {
                throw BrokerError.badRequest(code: "invalid_request", message: "'items' must hold 1...\(Self.maxBatch) entries")
            }
            // Items that name nothing usable are answered here; the rest go to the service.
            var refused: [Int: BrokerError] = [:]
            var targets: [TokenTarget] = []
            var placed: [Int] = []
            for (i, item) in items.enumerated() {
                // A member of the wrong type names nothing usable, as a missing one: the item is refused below.
                let (sessionID, subject, endUser, client) = ((try? item.string("session_id")) ?? nil, (try? item.string("subject")) ?? nil,
                                                             (try? item.string("end_user")) ?? nil, (try? item.string("client")) ?? nil)
                let named = [sessionID, subject, endUser].compactMap { $0 }.count
                if named == 1, let id = sessionID, !id.isEmpty {
                    targets.append(.session(id))
                } else if named == 1, let s = subject, !s.isEmpty, let c = client, !c.isEmpty {
                    targets.append(.subject(client: c, subject: s))
                } else if named == 1, let u = endUser, let c = client, !c.isEmpty {
                    guard EndUser.isValid(u) else {
                        refused[i] = .badRequest(code: "invalid_request", message: EndUser.rule)
                        continue
                    }
                    targets.append(.endUser(client: c, endUser: u))
                } else {
                    refused[i] = .badRequest(code: "invalid_request",
                                             message: "an item names either 'session_id', or 'subject' and 'client', or 'end_user' and 'client'")
                    continue
                }
                placed.append(i)
            }
            let count = items.count
            let invalid = refused
            // Each item's place among the service's results (-1: refused here), so that the results
            // are read where they are, not copied into a second array (a copy retains every string).
            var slot = [Int](repeating: -1, count: count)
            for (k, p) in placed.enumerated() { slot[p] = k }
            let slots = slot
            let render: @Sendable ([Result<IssuedToken, BrokerError>]) -> HTTPResponse = { results in
                // Sized once for the whole answer: growing a megabyte buffer by doubling copied it
                // over and over and faulted in fresh pages each time.
                var size = 64 + 256 * count
                for case .success(let t) in results { size += t.accessToken.utf8.count }
                var w = JSONWriter(capacity: size)
                w.beginObject()
                w.key("results")
                w.beginArray()
                func refusal(_ e: BrokerError) {
                    w.int("status", ErrorResponse.status(e))
                    for (k, v) in ErrorResponse.members(e) { w.member(k, json: v) }
                    if let after = ErrorResponse.retryAfter(e) { w.int("retry_after", after) }
                }
                for i in 0..<count {
                    w.beginObject()
                    w.int("index", i)
                    if slots[i] < 0 {
                        refusal(invalid[i]!)
                    } else {
                        switch results[slots[i]] {
                        case .success(let t):
                            w.int("status", 200)
                            Render.token(t, into: &w)
                        case .failure(let e): refusal(e)
                        }
                    }
                    w.endObject()
                }
                w.endArray()
                w.endObject()
                return HTTPResponse.json(200, w.bytes).uncacheable()
            }
            if targets.isEmpty { return .now(render([])) }
            let tokens = self.tokens
            let box = ResponseBox()
            let done = CurrentTrace.with(req.trace) {
                tokens.batch(by: principal, tenant: tenant, targets: targets, request: request, completion: { box.deliver(render($0)) })
            }
            if let done {
                return .now(render(done))
            }
            return .later { respond in box.wait(respond) }
        }
    }
}
