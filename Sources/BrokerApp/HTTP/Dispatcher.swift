import BrokerCore
import BrokerHTTP
import Foundation

/// Dispatcher is the HTTP front door: it refuses what FrontDoor found malformed and oversize
/// bodies, routes, answers 404/405, and
/// logs what failed (ids and codes only). Every error becomes a response through ErrorResponse.
struct Dispatcher: Sendable {
    let router: Router
    let logger: Logger
    let accessLog: Bool
    let maxBodyBytes: Int
    /// The audiences this listener serves: another audience's routes do not exist here (404).
    var audiences: Set<Audience> = Set(Audience.allCases)
    /// A listener of every audience serves every route: no path needs classifying there.
    private static let everyAudience = Audience.allCases.count
    /// Where request durations are counted, by route and status class.
    var metrics: RequestMetrics? = nil

    func handle(_ request: consuming HTTPRequest) -> HTTPReply {
        let started = DispatchTime.now().uptimeNanoseconds
        var req = request
        req.traceSeed = TraceIDs.seed()
        var route: Int? = nil
        let reply: HTTPReply
        if let why = req.refusal {
            var r = ErrorResponse.response(.badRequest(code: "invalid_request", message: "malformed request: \(why)"), requestID: req.requestID)
            r.headers.append(("Connection", "close"))
            reply = .now(r)
        } else if let why = req.certificateRefusal {
            var r = ErrorResponse.response(.unauthorized(why), requestID: req.requestID)
            r.headers.append(("Connection", "close"))
            reply = .now(r)
        } else if req.bodyTooLarge {
            reply = .now(ErrorResponse.response(.payloadTooLarge(limit: maxBodyBytes), requestID: req.requestID))
        } else if audiences.count < Self.everyAudience, !audiences.contains(Audience.of(path: req.path)) {
            reply = .now(ErrorResponse.response(.notFound("route"), requestID: req.requestID))
        } else {
            switch router.match(method: req.method, path: req.path) {
            case .found(let handler, let params, let index):
                req.parameters = params
                route = index
                reply = handler(req)
            case .methodNotAllowed(let allowed):
                var r = ErrorResponse.response(.methodNotAllowed, requestID: req.requestID)
                r.headers.append(("Allow", allowed.joined(separator: ", ")))
                reply = .now(r)
            case .notFound:
                reply = .now(ErrorResponse.response(.notFound("route"), requestID: req.requestID))
            }
        }
        switch reply {
        case .now(let r):
            finish(req, route, r, started)
            return reply
        case .later(let work):
            let req = req, route = route
            return .later { respond in
                work { r in
                    finish(req, route, r, started)
                    respond(r)
                }
            }
        }
    }

    /// Counts the request's duration and writes its log line (every request with the access
    /// log, else those that failed).
    private func finish(_ req: HTTPRequest, _ route: Int?, _ r: HTTPResponse, _ started: UInt64) {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        metrics?.observe(route: route, status: r.status, seconds: seconds)
        guard accessLog || r.status >= 400 else { return }
        let ms = seconds * 1e3
        let tenant = req.parameters["t"].map { [("tenant", $0)] } ?? []
        let span = req.trace
        let trace = [("trace_id", span.traceID), ("span_id", span.spanID)]
        logger.write(r.status >= 500 ? .warn : .info, "request", [("request_id", req.requestID), ("method", req.method), ("path", req.path)]
                     + tenant + trace + [("status", String(r.status)), ("ms", String(format: "%.2f", ms))] + r.logFields
                     + (r.caller.map { [("key_id", $0)] } ?? []))
    }
}
