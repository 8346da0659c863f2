import BrokerCore
import BrokerHTTP

/// ErrorResponse is the one place where errors become HTTP: status, and the JSON body
/// `{"error", "message", "request_id"}`. Messages come from BrokerError and are
/// generic by construction.
enum ErrorResponse {
    static func status(_ e: BrokerError) -> Int {
        switch e {
        case .badRequest: 400
        case .unauthorized: 401
        case .forbidden, .insufficientScope: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .conflict, .sessionNotActive: 409
        case .payloadTooLarge: 413
        case .minTTLTooLong, .unprocessable: 422
        case .idpRejectedClient, .idpCertificateRefused: 502
        case .idpUnavailable, .refreshBusy, .storeUnavailable, .sealingKeyUnavailable: 503
        case .internalError, .storedValueUnknown: 500
        case .proxy(let r): r.status
        }
    }

    /// The error's JSON members without the request id (batch items embed these).
    static func members(_ e: BrokerError) -> [(String, String)] {
        var m = [("error", JSONText.quote(e.code)), ("message", JSONText.quote(e.message))]
        if case .sessionNotActive(let s) = e { m.append(("state", JSONText.quote(s.rawValue))) }
        if case .minTTLTooLong(let max) = e { m.append(("max_ttl", String(max))) }
        return m
    }

    static func response(_ e: BrokerError, requestID: String) -> HTTPResponse {
        var r = HTTPResponse.json(status(e), JSONText.object(members(e) + [("request_id", JSONText.quote(requestID))]))
        // The log line carries the code, and for a 5xx the message (generic by construction).
        r.logFields = [("error", e.code)] + (r.status >= 500 ? [("message", e.message)] : [])
        if case .unauthorized = e { r.headers.append(("WWW-Authenticate", "Bearer")) }
        if let after = retryAfter(e) { r.headers.append(("Retry-After", String(after))) }
        return r
    }

    /// The response to any error a route threw: a BrokerError's own, otherwise a 500 whose
    /// request log line names the cause (`cause`; a failed cryptography call also as
    /// `crypto_failure`: the library function, nothing it said), which the answer never shows.
    static func response(to error: any Error, requestID: String) -> HTTPResponse {
        var cause: String?
        var r = response(BrokerError.answering(error) { cause = $0 }, requestID: requestID)
        if let c = cause { r.logFields.append(("cause", c)) }
        if let c = error as? CryptoFailure { r.logFields.append(("crypto_failure", c.operation)) }
        return r
    }

    /// Seconds after which asking again may succeed (the `Retry-After` header; a batch item's
    /// `retry_after`), for the errors that pass.
    static func retryAfter(_ e: BrokerError) -> Int? {
        switch e {
        case .idpUnavailable(let after): after
        case .refreshBusy: 1
        // A database restart or a failover to a standby lasts seconds, and the pool connects
        // again at the next statement: 2 s brings a worker back soon after it ends while
        // spreading a fleet's retries over it instead of a tight loop of 503s.
        case .storeUnavailable: 2
        case .proxy(let r): r.retryAfter
        default: nil
        }
    }
}
