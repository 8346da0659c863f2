import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// The protected resource: an API as a client's upstream sees one, behind the token check of
/// DevIdP+ResourceAuth. One streamed route takes every method below `/resource`, so bodies flow
/// both ways without being held (Router.addStream); the work that reads or writes a body runs on
/// a thread of its own, never on one of the server's.
///
/// - `GET|POST|PUT|PATCH|DELETE /resource`: who the token is for.
/// - `/resource/echo` (any method): the request as received — method, raw path and query, every
///   header in order (names lowercase), the body's length and SHA-256.
/// - `GET /resource/bytes?n=N`: N bytes of ResourceBytes, with Content-Length.
/// - `POST|PUT /resource/upload`: the body's length and SHA-256.
/// - `GET /resource/redirect?to=URL[&status=302]`: a redirect to URL.
///
/// Before the token is looked at, a fault may answer 429 or 503 (ResourceFault); every answer
/// comes `delay_ms` late when that switch is set (DevIdP+ResourceAdmin).
extension DevIdP {
    /// Bodies up to a terabyte: large enough for any test, small enough not to overflow a limit.
    static let resourceBodyLimit = 1 << 40

    func addResource(to r: inout Router) {
        r.addStream("/resource/{rest*}", maxBodyBytes: Self.resourceBodyLimit) { [self] req in resourceCall(req) }
    }

    func resourceCall(_ req: HTTPRequest) -> HTTPReply {
        let delay = state.withLock { $0.resource.delayMS }
        guard delay > 0 else { return serveResource(req) }
        let due = Date().addingTimeInterval(Double(delay) / 1000)
        return .later { [self] respond in
            Self.at(due) {
                switch self.serveResource(req) {
                case .now(let r): respond(r)
                case .later(let work): work(respond)
                }
            }
        }
    }

    func serveResource(_ req: HTTPRequest) -> HTTPReply {
        let route = req[param: "rest"]
        let methods: [String]
        switch route {
        case "": methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        case "echo": methods = []
        case "bytes", "redirect": methods = ["GET"]
        case "upload": methods = ["POST", "PUT"]
        default: return drained(req, json(404, ["error": "not_found"]))
        }
        if !methods.isEmpty, !methods.contains(req.method) {
            return drained(req, json(405, ["error": "method_not_allowed"], ["Allow": methods.joined(separator: ", ")]))
        }
        if let limited = rateLimited(req) { return drained(req, limited) }
        let at: IssuedAccessToken
        switch authorizeResource(req) {
        case .refused(let r): return drained(req, r)
        case .granted(let t): at = t
        }
        switch route {
        case "": return drained(req, json(200, ["sub": at.subject, "scope": at.scope, "bound": at.jkt != nil, "client_id": at.client]))
        case "echo": return echo(req, at)
        case "bytes": return bytes(req, at)
        case "upload": return upload(req, at)
        default: return redirect(req)
        }
    }

    /// The fault's answer, when one is set for the caller: the client is read from the token's
    /// `client_id` claim, unchecked, as a gateway in front of an API would.
    func rateLimited(_ req: HTTPRequest) -> HTTPResponse? {
        let token = req.header("authorization").flatMap { $0.split(separator: " ", maxSplits: 1).last.map(String.init) }
        let client = token.flatMap { (try? CompactJWS.parse($0))?.claims["client_id"] as? String }
        guard let f = state.withLock({ s -> ResourceFault? in
            let f = s.resource.takeFault(client: client)
            if f != nil { s.resourceCounters[client ?? "", default: .init()].rateLimited += 1 }
            return f
        }) else { return nil }
        let retry = f.retryAfterValue(now: Date()).map { ["Retry-After": $0] } ?? [:]
        return json(f.status, ["error": f.status == 429 ? "rate_limited" : "temporarily_unavailable"], retry)
    }

    func echo(_ req: HTTPRequest, _ at: IssuedAccessToken) -> HTTPReply {
        .later { [self] respond in
            Thread.detachNewThread {
                let (n, sha) = self.consume(req.bodyStream, client: at.client)
                let raw = req.rawTarget
                let q = raw.firstIndex(of: "?")
                respond(self.json(200, ["method": req.method, "path": String(raw[..<(q ?? raw.endIndex)]),
                                        "query": q.map { String(raw[raw.index(after: $0)...]) } ?? "",
                                        "headers": req.allHeaders.map { [$0.name, $0.value] },
                                        "body_bytes": n, "body_sha256": sha, "sub": at.subject, "client_id": at.client]))
            }
        }
    }

    func upload(_ req: HTTPRequest, _ at: IssuedAccessToken) -> HTTPReply {
        .later { [self] respond in
            Thread.detachNewThread {
                let (n, sha) = self.consume(req.bodyStream, client: at.client)
                respond(self.json(200, ["bytes": n, "sha256": sha]))
            }
        }
    }

    func bytes(_ req: HTTPRequest, _ at: IssuedAccessToken) -> HTTPReply {
        guard let n = req.queryValue("n").flatMap({ Int($0) }), n >= 0, n <= Self.resourceBodyLimit else {
            return drained(req, json(400, ["error": "invalid_request", "error_description": "n is a byte count"]))
        }
        return .later { [self] respond in
            Thread.detachNewThread {
                let pipe = ResponseBodyPipe(length: n)
                respond(.streamed(200, headers: [("Content-Type", "application/octet-stream")], pipe: pipe))
                var buf = [UInt8](repeating: 0, count: 1 << 16)
                var sent = 0
                while sent < n {
                    let k = min(buf.count, n - sent)
                    buf.withUnsafeMutableBytes { ResourceBytes.fill($0, from: sent) }
                    guard buf.withUnsafeBytes({ pipe.write(UnsafeRawBufferPointer(rebasing: $0[0..<k])) }) else { break }
                    sent += k
                }
                pipe.finish(complete: sent == n)
                let total = sent
                self.state.withLock { $0.resourceCounters[at.client, default: .init()].bytesOut += total }
            }
        }
    }

    func redirect(_ req: HTTPRequest) -> HTTPReply {
        let status = req.queryValue("status").flatMap { Int($0) } ?? 302
        guard let to = req.queryValue("to"), !to.isEmpty, [301, 302, 303, 307, 308].contains(status) else {
            return .now(json(400, ["error": "invalid_request", "error_description": "to is a URL; status 301, 302, 303, 307 or 308"]))
        }
        return .now(HTTPResponse(status: status, headers: [("Location", to)]))
    }

    /// Reads `body` to its end: its length and SHA-256 (lowercase hex), counted as bytes in.
    func consume(_ body: (any ByteSource)?, client: String) -> (Int, String) {
        let hasher = DevIdPCrypto.must { try SHA256Hasher() }
        var n = 0
        if let body {
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            while let k = buf.withUnsafeMutableBytes({ body.read(into: $0) }), k > 0 {
                buf.withUnsafeBytes { b in DevIdPCrypto.must { try hasher.update(UnsafeRawBufferPointer(rebasing: b[0..<k])) } }
                n += k
            }
        }
        let total = n
        state.withLock { $0.resourceCounters[client, default: .init()].bytesIn += total }
        let digest = DevIdPCrypto.must { try hasher.finish() }
        return (n, digest.map { String(format: "%02x", $0) }.joined())
    }

    /// Answers `r` and reads whatever body the request has, unwanted: a caller whose upload is
    /// refused gets the refusal, not a connection closed under it.
    func drained(_ req: HTTPRequest, _ r: HTTPResponse) -> HTTPReply {
        guard let body = req.bodyStream else { return .now(r) }
        return .later { respond in
            respond(r)
            Thread.detachNewThread {
                var buf = [UInt8](repeating: 0, count: 1 << 16)
                while let k = buf.withUnsafeMutableBytes({ body.read(into: $0) }), k > 0 {}
            }
        }
    }
}
