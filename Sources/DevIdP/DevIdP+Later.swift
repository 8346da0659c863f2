import BrokerHTTP
import Foundation

/// Late answers without a server thread. The IdP serves on two MHD threads, so nothing may
/// sleep in a handler: a delay is a `.later` answer whose connection stays suspended while a
/// timer on the global queue waits. Timers may fire late, never early.
extension DevIdP {
    /// Runs `work` on the global queue at `deadline` (as soon as possible when it is nil or past).
    static func at(_ deadline: Date?, _ work: @escaping @Sendable () -> Void) {
        let wait = max(0, deadline?.timeIntervalSinceNow ?? 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + wait, execute: work)
    }

    /// The answer to a request that met an injected failure: the failure's own answer or, for
    /// status 0, `process()`'s — either `delayMS` after arrival.
    func reply(under f: DevIdPState.Failure, _ process: @escaping @Sendable () -> HTTPResponse) -> HTTPReply {
        let due = Date().addingTimeInterval(Double(f.delayMS) / 1000)
        return .later { [self] respond in
            Self.at(due) { respond(f.status == 0 ? process() : self.failing(f)) }
        }
    }

    /// An injected failure's answer (status ≠ 0): exactly the configured body and content type
    /// when one was given, else the JSON `temporarily_unavailable`; Retry-After when configured.
    func failing(_ f: DevIdPState.Failure) -> HTTPResponse {
        let retry = f.retryAfter.map { [("Retry-After", String($0))] } ?? []
        guard let body = f.body else {
            return json(f.status, ["error": "temporarily_unavailable"], Dictionary(uniqueKeysWithValues: retry))
        }
        let type = f.contentType.map { [("Content-Type", $0)] } ?? []
        return HTTPResponse(status: f.status, headers: type + retry, body: Array(body.utf8))
    }
}
