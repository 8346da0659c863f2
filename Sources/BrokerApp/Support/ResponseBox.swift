import BrokerHTTP
import Synchronization

/// ResponseBox hands a response produced before or after the server starts waiting for it to
/// whichever side comes second.
final class ResponseBox: Sendable {
    private let state = Mutex<(response: HTTPResponse?, waiter: (@Sendable (HTTPResponse) -> Void)?)>((nil, nil))

    func deliver(_ r: HTTPResponse) {
        let waiter = state.withLock { s -> (@Sendable (HTTPResponse) -> Void)? in
            if let w = s.waiter { return w }
            s.response = r
            return nil
        }
        waiter?(r)
    }

    func wait(_ respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let ready = state.withLock { s -> HTTPResponse? in
            if let r = s.response { return r }
            s.waiter = respond
            return nil
        }
        if let ready { respond(ready) }
    }
}
