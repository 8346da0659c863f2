/// ProxyRefusal is why the outbound proxy answered a caller itself instead of passing an
/// upstream's answer on. Messages name hosts and limits, never a credential or anything an
/// upstream sent in its body.
public enum ProxyRefusal: Error, Sendable, Equatable {
    /// The client has no upstream, or its base URL cannot be made from the session (a missing
    /// metadata member).
    case noUpstream(String)
    /// The path or query asked for would leave the upstream's base (`..`, encoded slashes, an
    /// absolute URL).
    case badPath(String)
    /// The upstream redirected to another origin: nothing was sent there.
    case redirectRefused(host: String)
    /// More same-origin redirects than the proxy follows.
    case tooManyRedirects
    /// The upstream asked callers to wait (429/503 with Retry-After): no call is made before then.
    case rateLimited(host: String, retryAfter: Int)
    /// Every proxy worker is busy: ask again shortly.
    case busy(retryAfter: Int)
    /// The upstream could not be reached, or gave no answer.
    case unreachable(host: String, reason: String)
    /// The upstream's address is loopback, private, link-local or metadata, and the client does
    /// not allow that.
    case addressRefused(host: String)
    /// The caller's body broke off, or exceeded the limit.
    case bodyAbandoned
    /// The upstream announced a body longer than the proxy passes on.
    case responseTooLarge(limit: Int)

    /// The HTTP status the caller gets.
    public var status: Int {
        switch self {
        case .noUpstream: 409
        case .badPath: 400
        case .redirectRefused, .tooManyRedirects, .unreachable, .addressRefused, .responseTooLarge: 502
        case .rateLimited: 429
        case .busy: 503
        case .bodyAbandoned: 400
        }
    }

    /// The JSON error body's code.
    public var code: String {
        switch self {
        case .noUpstream: "no_upstream"
        case .badPath: "invalid_upstream_path"
        case .redirectRefused: "upstream_redirect_refused"
        case .tooManyRedirects: "upstream_too_many_redirects"
        case .rateLimited: "upstream_rate_limited"
        case .busy: "proxy_busy"
        case .unreachable: "upstream_unreachable"
        case .addressRefused: "upstream_address_refused"
        case .bodyAbandoned: "request_body_abandoned"
        case .responseTooLarge: "upstream_response_too_large"
        }
    }

    public var message: String {
        switch self {
        case .noUpstream(let why): "no upstream for this request: \(why)"
        case .badPath(let why): "the path leaves the upstream's base URL: \(why)"
        case .redirectRefused(let host): "the upstream redirected to another host (\(host)); the proxy reaches only the client's upstream, and sent nothing there"
        case .tooManyRedirects: "the upstream redirected more times than the proxy follows"
        case .rateLimited(let host, let after): "\(host) asked to wait; retry after \(after) s (no call was made)"
        case .busy: "every proxy worker is busy; retry shortly"
        case .unreachable(let host, let reason): "\(host) could not be reached: \(reason)"
        case .addressRefused(let host): "\(host) resolves to a loopback, private, link-local or metadata address, which this client does not allow"
        case .bodyAbandoned: "the request body broke off or exceeded the limit"
        case .responseTooLarge(let limit): "the upstream's answer is longer than the \(limit) bytes the proxy passes on"
        }
    }

    /// Seconds before asking again may succeed (`Retry-After`).
    public var retryAfter: Int? {
        switch self {
        case .rateLimited(_, let s), .busy(let s): s
        default: nil
        }
    }
}
