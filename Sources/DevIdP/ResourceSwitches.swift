import Foundation

/// ResourceSwitches are the test controls of the protected resource (`/resource…`): how a
/// refusal is worded, how late every answer comes, and the next answers' rate-limit fault.
struct ResourceSwitches: Sendable {
    /// Refusals of a token are a bare `401` with `WWW-Authenticate: Bearer realm="dev"` and no
    /// `error` attribute, as some providers answer (DPoP proof and nonce refusals keep theirs).
    var plain401 = false
    /// Every resource answer comes this late (a `.later` answer: no server thread waits).
    var delayMS = 0
    var fault: ResourceFault?

    /// Takes one use of the fault when it is set for `client` (or for any client).
    mutating func takeFault(client: String?) -> ResourceFault? {
        guard var f = fault, f.remaining > 0, f.client == nil || f.client == client else { return nil }
        f.remaining -= 1
        fault = f.remaining > 0 ? f : nil
        return f
    }
}

/// ResourceFault makes the next `remaining` resource calls (of `client`, or of anyone's) answer
/// `status` (429 or 503) before any token is looked at, as a rate limiter in front of an API
/// does, with `Retry-After` (RFC 9110 §10.2.3) in seconds or as an HTTP-date that many seconds
/// ahead, or without one.
struct ResourceFault: Sendable {
    enum RetryAfter: Sendable {
        case seconds(Int)
        case date(secondsAhead: Int)
    }
    let status: Int
    let retryAfter: RetryAfter?
    var remaining: Int
    let client: String?

    /// The `Retry-After` value at `now`, if any.
    func retryAfterValue(now: Date) -> String? {
        switch retryAfter {
        case nil: return nil
        case .seconds(let s): return String(s)
        case .date(let s): return Self.httpDate(now.addingTimeInterval(Double(s)))
        }
    }

    /// IMF-fixdate (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: d)
    }
}

/// ResourceCounters are one client's counts at the protected resource (`/stats`).
struct ResourceCounters: Sendable {
    var accepted = 0
    /// Refusals by their `error` (`invalid_token`, `use_dpop_nonce`, `invalid_dpop_proof`).
    var refused: [String: Int] = [:]
    /// 429 and 503 answers of a fault.
    var rateLimited = 0
    var bytesOut = 0
    var bytesIn = 0
    /// Accepted calls whose token is bound to the client certificate the connection presented.
    var certificateBound = 0

    mutating func add(_ o: ResourceCounters) {
        accepted += o.accepted
        for (k, v) in o.refused { refused[k, default: 0] += v }
        rateLimited += o.rateLimited
        bytesOut += o.bytesOut
        bytesIn += o.bytesIn
        certificateBound += o.certificateBound
    }
}
