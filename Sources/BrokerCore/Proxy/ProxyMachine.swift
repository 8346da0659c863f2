import Foundation

/// ProxyMachine decides, for one proxied request, what happens after each upstream answer. It
/// does no I/O: the driver (ProxyService) sends, refreshes, waits and streams as told, and tells
/// the machine what came of it.
///
/// The rules, in the order they are tried on an answer's head:
/// - DPoP `use_dpop_nonce` with a `DPoP-Nonce` (RFC 9449 §9): one resend with a proof carrying it.
/// - The token is invalid (`invalid_token`, or a bare 401 where the client says so): one forced
///   refresh of that token, then one resend when the body can be replayed; otherwise the 401
///   goes back after the refresh, saying so (`Tokenbroker-Token-Refreshed`).
/// - 429/503 with `Retry-After`: the wait is recorded (`backoffUntil`); a client that opted in
///   has idempotent requests waited out and resent while the waits fit its budget.
/// - 3xx with a `Location` on the same origin: followed (303, and 301/302 after a POST, as GET
///   without a body; 307/308 with the same method and body when it can be replayed), at most
///   `maxRedirects` times. Another origin is refused: nothing is sent there.
/// - Anything else goes back to the caller as it came.
public struct ProxyMachine: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var url: String
        public var origin: String
        /// The body can be sent again (no body, or a replayable one).
        public var replayable: Bool
        public var hasBody: Bool
        public var dpop: Bool
        public var plain401InvalidToken: Bool
        public var retryRateLimited: Bool
        public var retryBudget: TimeInterval

        public init(method: String, url: String, origin: String, replayable: Bool, hasBody: Bool, dpop: Bool = false,
                    plain401InvalidToken: Bool = false, retryRateLimited: Bool = false, retryBudget: TimeInterval = 0) {
            self.method = method
            self.url = url
            self.origin = origin
            self.replayable = replayable
            self.hasBody = hasBody
            self.dpop = dpop
            self.plain401InvalidToken = plain401InvalidToken
            self.retryRateLimited = retryRateLimited
            self.retryBudget = retryBudget
        }
    }

    /// One request to the upstream.
    public struct Send: Sendable, Equatable {
        public var method: String
        public var url: String
        /// Send the caller's body (rewound first when it was sent before).
        public var withBody: Bool
        /// The resource server's DPoP nonce to put in the proof.
        public var nonce: String?

        public init(method: String, url: String, withBody: Bool, nonce: String?) {
            self.method = method
            self.url = url
            self.withBody = withBody
            self.nonce = nonce
        }
    }

    public enum Action: Sendable, Equatable {
        case send(Send)
        /// Force a refresh of the token just rejected (only if the session still holds it),
        /// then call `refreshed`.
        case refresh
        /// Wait this long, then call `waited`.
        case wait(TimeInterval)
        /// Stream the upstream's answer to the caller; `tokenRefreshed` adds the header saying
        /// whether the token was refreshed after a 401.
        case deliver(tokenRefreshed: Bool?)
        /// Answer the caller with this refusal (the upstream's body is dropped).
        case refuse(ProxyRefusal)
        /// The refresh failed: answer with its error (the driver holds it).
        case failRefresh
    }

    /// What a head leads to: the body is streamed (`deliver`) or dropped, then `next` runs.
    public struct Step: Sendable, Equatable {
        /// The action; when it is not `deliver` the upstream's body is dropped.
        public var action: Action
        /// The upstream asked to be left alone until then (record it).
        public var backoffUntil: Date?
        /// A `refresh` to run before the body is streamed (the 401 of a body that cannot be
        /// replayed waits for it, then goes back with `deliver`).
        public var refreshFirst: Bool = false
    }

    public static let maxRedirects = 3
    static let idempotent: Set<String> = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]

    public let request: Request
    private(set) var current: Send
    private var nonceRetried = false
    private var refreshed = false
    private var redirects = 0
    private var waitedSoFar: TimeInterval = 0
    private var deliverAfterRefresh = false

    public init(_ request: Request) {
        self.request = request
        current = Send(method: request.method, url: request.url, withBody: request.hasBody, nonce: nil)
    }

    /// The first send (with the nonce last seen at this origin, if any).
    public mutating func start(nonce: String?) -> Action {
        current.nonce = request.dpop ? nonce : nil
        return .send(current)
    }

    /// An answer's head came back.
    public mutating func head(status: Int, headers: [(name: String, value: String)], now: Date) -> Step {
        func values(_ n: String) -> [String] { headers.filter { $0.name.lowercased() == n }.map(\.value) }
        let challenge = WWWAuthenticate(values("www-authenticate"))
        let canResend = !current.withBody || request.replayable
        if status == 401 || status == 400, request.dpop, challenge.useDPoPNonce, !nonceRetried,
           let nonce = values("dpop-nonce").first, canResend {
            nonceRetried = true
            current.nonce = nonce
            return Step(action: .send(current))
        }
        if status == 401, challenge.invalidToken || (request.plain401InvalidToken && challenge.namesNoError) {
            if refreshed { return Step(action: .deliver(tokenRefreshed: true)) }
            refreshed = true
            if canResend { return Step(action: .refresh) }
            deliverAfterRefresh = true
            return Step(action: .refresh, refreshFirst: true)
        }
        if status == 429 || status == 503, let ra = values("retry-after").first, let wait = RetryAfter.seconds(ra, now: now) {
            let until = now.addingTimeInterval(wait)
            if request.retryRateLimited, Self.idempotent.contains(current.method.uppercased()), canResend,
               waitedSoFar + wait <= request.retryBudget {
                waitedSoFar += wait
                return Step(action: .wait(wait), backoffUntil: until)
            }
            return Step(action: .deliver(tokenRefreshed: nil), backoffUntil: until)
        }
        if [301, 302, 303, 307, 308].contains(status), let location = values("location").first {
            return redirect(status, location)
        }
        return Step(action: .deliver(tokenRefreshed: refreshed ? true : nil))
    }

    /// The forced refresh ended: resend with the new token, or pass the held 401 on.
    public mutating func refreshed(ok: Bool) -> Action {
        if deliverAfterRefresh { return .deliver(tokenRefreshed: ok) }
        guard ok else { return .failRefresh }
        return .send(current)
    }

    /// A rate limit's wait is over: send again.
    public mutating func waited() -> Action { .send(current) }

    private mutating func redirect(_ status: Int, _ location: String) -> Step {
        guard let base = URL(string: current.url), let target = URL(string: location, relativeTo: base)?.absoluteURL,
              let origin = UpstreamURL.origin(of: target.absoluteString) else {
            return Step(action: .deliver(tokenRefreshed: nil))
        }
        guard origin == UpstreamURL.origin(of: request.origin) else {
            return Step(action: .refuse(.redirectRefused(host: target.host ?? origin)))
        }
        guard redirects < Self.maxRedirects else { return Step(action: .refuse(.tooManyRedirects)) }
        var next = current
        next.url = target.absoluteString
        if let r = URLComponents(string: next.url) {
            var r = r
            r.fragment = nil
            next.url = r.string ?? next.url
        }
        let method = current.method.uppercased()
        if status == 303 || ((status == 301 || status == 302) && method == "POST") {
            next.method = method == "HEAD" ? "HEAD" : "GET"
            next.withBody = false
        } else if current.withBody && !request.replayable {
            // 307/308 keep the body, and this one cannot be sent again: the caller follows.
            return Step(action: .deliver(tokenRefreshed: nil))
        }
        redirects += 1
        current = next
        return Step(action: .send(current))
    }
}
