@testable import BrokerApp
import BrokerCore
import BrokerHTTP
import Foundation
import Testing

/// The routes as the front door dispatches them, with no socket and no process: requests go
/// straight to `Dispatcher.handle`, over the real PostgreSQL of `make test`.
@Suite("Routes through the dispatcher, without a socket")
struct RouteTests {
    static let runtime: BrokerRuntime = {
        let config = try! BrokerConfig.load(["DATABASE_URL": try! TestDatabase.url(),
                                             "TOKENBROKER_SEALING_KEYS": "k1:" + Data(repeating: 3, count: 32).base64EncodedString(),
                                             "TOKENBROKER_SQL_DIR": TestDatabase.sqlDirectory.path])
        let rt = try! BrokerRuntime(config: config, logger: Logger(level: .error))
        _ = try! rt.migrate()
        return rt
    }()

    func dispatcher(_ audiences: Set<Audience> = Set(Audience.allCases)) -> Dispatcher {
        Dispatcher(router: Routes.router(Self.runtime), logger: Logger(level: .error), accessLog: false, maxBodyBytes: 1024, audiences: audiences)
    }

    func answer(_ d: Dispatcher, _ method: String, _ path: String, key: String? = nil, body: String = "",
                _ edit: (inout HTTPRequest) -> Void = { _ in }) async -> HTTPResponse {
        var req = HTTPRequest(method: method, path: path, headers: key.map { [("authorization", "Bearer " + $0)] } ?? [],
                              body: Array(body.utf8), requestID: "test")
        edit(&req)
        switch d.handle(req) {
        case .now(let r): return r
        case .later(let work): return await withCheckedContinuation { c in work { c.resume(returning: $0) } }
        }
    }

    func header(_ r: HTTPResponse, _ name: String) -> String? { r.headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    func text(_ r: HTTPResponse) -> String { String(decoding: r.body, as: UTF8.self) }

    @Test("the front door's refusals, 404, 405 with Allow, 413, 401 with WWW-Authenticate: the documented JSON, before any route runs")
    func refusals() async {
        let d = dispatcher()
        let malformed = await answer(d, "GET", "/healthz") { $0.refusal = "more than one Content-Length" }
        #expect(malformed.status == 400 && header(malformed, "Connection") == "close" && text(malformed).contains("more than one Content-Length"))
        let certificate = await answer(d, "GET", "/v1/apikeys") { $0.certificateRefusal = "this listener requires a client certificate" }
        #expect(certificate.status == 401 && header(certificate, "Connection") == "close")
        let large = await answer(d, "POST", "/v1/apikeys") { $0.bodyTooLarge = true }
        #expect(large.status == 413 && text(large).contains("\"error\""))
        #expect(await answer(d, "GET", "/v1/nowhere").status == 404)
        let method = await answer(d, "PATCH", "/healthz")
        #expect(method.status == 405 && header(method, "Allow") == "GET")
        let anonymous = await answer(d, "GET", "/v1/apikeys")
        #expect(anonymous.status == 401 && header(anonymous, "WWW-Authenticate") == "Bearer")
        #expect(await answer(d, "GET", "/healthz").status == 200)
    }

    @Test("a listener serves only its audiences: another's routes are 404 there")
    func audiences() async throws {
        let (_, key) = try Self.runtime.operators.createKey(name: "routes", roles: [.operator], tenants: [Principal.allTenants], actor: "test")
        let ops = dispatcher([.ops]), inner = dispatcher([.internal])
        #expect(await answer(ops, "GET", "/healthz").status == 200)
        #expect(await answer(ops, "GET", "/v1/apikeys", key: key).status == 404)
        #expect(await answer(inner, "GET", "/metrics").status == 404)
        let listed = await answer(inner, "GET", "/v1/apikeys", key: key)
        #expect(listed.status == 200 && text(listed).contains("\"keys\"") && header(listed, "Content-Type") == "application/json")
        #expect(await answer(dispatcher([.public]), "GET", "/v1/callback").status == 400, "the callback without state is a 400 of its own")
        #expect(await answer(inner, "GET", "/v1/callback").status == 404)
    }

    @Test("token bodies answer the same twice: a bad one is refused each time with its reason, and a body is read per route")
    func tokenBodiesTwice() async throws {
        _ = try Self.runtime.operators.putTenant(id: "memo-t", name: "Memo", actor: "test")
        let (_, key) = try Self.runtime.operators.createKey(name: "bodies", roles: [.worker], tenants: ["memo-t"], actor: "test")
        let d = dispatcher()
        let bySession = "/v1/tenants/memo-t/sessions/ses_none/token", bySubject = "/v1/tenants/memo-t/token"
        for _ in 0..<2 {
            let bad = await answer(d, "POST", bySession, key: key, body: #"{"min_ttl":"60"}"#)
            #expect(bad.status == 400 && text(bad).contains("'min_ttl' must be an integer"))
            let range = await answer(d, "POST", bySession, key: key, body: #"{"min_ttl":90000}"#)
            #expect(range.status == 400 && text(range).contains("0...86400"))
            let noClient = await answer(d, "POST", bySubject, key: key, body: #"{"subject":"s"}"#)
            #expect(noClient.status == 400 && text(noClient).contains("'client' is required"))
        }
        // The same bytes, one route reading the lookup's members and the other not.
        let body = #"{"min_ttl":60,"client":"c","subject":"s"}"#
        for _ in 0..<2 {
            #expect(await answer(d, "POST", bySession, key: key, body: body).status == 404)
            #expect(await answer(d, "POST", bySubject, key: key, body: body).status == 404)
            let noSubject = await answer(d, "POST", bySubject, key: key, body: #"{"min_ttl":60,"client":"c"}"#)
            #expect(noSubject.status == 400 && text(noSubject).contains("'subject' is required"))
        }
    }
}
