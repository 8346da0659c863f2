import BrokerHTTP
import Foundation

/// A webhook test receiver (the broker's webhooks are tested against it, over HTTP): it keeps
/// what each named receiver was sent — the Standard Webhooks headers and the body, verbatim —
/// and can be switched down (503), to test delivery after an outage. It verifies nothing: the
/// tests do, with the documented check.
extension DevIdP {
    public static let receiverHeaders = ["webhook-id", "webhook-timestamp", "webhook-signature"]

    func receive(_ req: HTTPRequest) -> HTTPResponse {
        let name = req[param: "name"]
        var headers: [String: String] = [:]
        for h in Self.receiverHeaders { headers[h] = req.header(h) }
        let entry = (headers: headers, body: String(decoding: req.body, as: UTF8.self), at: Date().timeIntervalSince1970)
        let down = state.withLock { s -> Bool in
            if s.receivers[name]?.down == true { return true }
            s.receivers[name, default: .init()].received.append(entry)
            return false
        }
        return down ? json(503, ["error": "receiver down"]) : HTTPResponse(status: 204)
    }

    /// `{"received": [{"webhook-id", "webhook-timestamp", "webhook-signature", "body", "at"}]}`, in arrival order.
    func received(_ req: HTTPRequest) -> HTTPResponse {
        let list = state.withLock { $0.receivers[req[param: "name"]]?.received ?? [] }
        return json(200, ["received": list.map { e -> [String: Any] in
            var o: [String: Any] = ["body": e.body, "at": e.at]
            for h in Self.receiverHeaders { o[h] = e.headers[h] ?? NSNull() }
            return o
        }])
    }

    /// `{"name", "down": bool}`: a down receiver answers 503 and keeps nothing.
    func setReceiver(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = Self.object(req), let name = o["name"] as? String, let down = o["down"] as? Bool else {
            return json(400, ["error": "invalid_request", "error_description": "name and down"])
        }
        state.withLock { $0.receivers[name, default: .init()].down = down }
        return json(200, ["name": name, "down": down])
    }
}
