import Foundation

/// BrokerError is every refusal the broker answers with. Messages are written for the caller and
/// are generic on purpose: none ever contains a token, a secret or an IdP response body.
/// The mapping to HTTP status and JSON lives in exactly one place (BrokerApp's ErrorResponse).
public enum BrokerError: Error, Sendable, Equatable {
    case badRequest(code: String, message: String)
    case unauthorized(String)
    case forbidden(String)
    case insufficientScope(missing: [String])
    case notFound(String)
    case methodNotAllowed
    case conflict(code: String, message: String)
    /// The session is not active; the code is its state (409 with that state).
    case sessionNotActive(SessionState)
    case payloadTooLarge(limit: Int)
    case minTTLTooLong(maximum: Int)
    case unprocessable(code: String, message: String)
    /// The IdP could not be reached or answered 5xx/429; retry later.
    case idpUnavailable(retryAfter: Int?)
    /// The IdP rejected the broker's own client authentication on a refresh (`invalid_client`,
    /// `unauthorized_client`, 401): an operator must fix the client registration.
    case idpRejectedClient
    /// The provider's TLS certificate was refused (not issued by a CA this client trusts,
    /// expired, or for another name): the request never left, and only a change of the client's
    /// trust or of the provider's certificate mends it. The reason is OpenSSL's, never received text.
    case idpCertificateRefused(reason: String)
    /// Another refresh of this session is still running (here or on another replica).
    case refreshBusy
    case storeUnavailable
    /// A stored value is sealed under a key this replica's keyring lacks (a key rotation not
    /// rolled out to every replica yet): retry on another replica, or add the key.
    case sealingKeyUnavailable(keyID: String)
    /// A stored enum value this release does not know (written by a newer release, or by hand):
    /// the request that read it is refused rather than served under a guessed default. The
    /// column is `table.column`; enum values are never secrets.
    case storedValueUnknown(column: String, value: String)
    case internalError
    /// The outbound proxy answered itself (ProxyRefusal: its status, code and message).
    case proxy(ProxyRefusal)

    /// The machine-readable code of the JSON error body.
    public var code: String {
        switch self {
        case .badRequest(let code, _), .conflict(let code, _), .unprocessable(let code, _): code
        case .unauthorized: "unauthorized"
        case .forbidden: "forbidden"
        case .insufficientScope: "insufficient_scope"
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .sessionNotActive(let state): state.rawValue
        case .payloadTooLarge: "payload_too_large"
        case .minTTLTooLong: "min_ttl_too_long"
        case .idpUnavailable: "idp_unavailable"
        case .idpRejectedClient: "idp_client_rejected"
        case .idpCertificateRefused: "idp_certificate_refused"
        case .refreshBusy: "refresh_busy"
        case .storeUnavailable: "store_unavailable"
        case .sealingKeyUnavailable: "sealing_key_unavailable"
        case .storedValueUnknown: "stored_value_unknown"
        case .internalError: "internal_error"
        case .proxy(let r): r.code
        }
    }

    /// A sentence for humans.
    public var message: String {
        switch self {
        case .badRequest(_, let m), .conflict(_, let m), .unprocessable(_, let m): m
        case .unauthorized(let m), .forbidden(let m): m
        case .insufficientScope(let missing): "the session was not granted: \(missing.joined(separator: " "))"
        case .notFound(let what): "\(what) not found"
        case .methodNotAllowed: "method not allowed on this route"
        case .sessionNotActive(.needsReauth): "the user must sign in again (the IdP refused the refresh token)"
        case .sessionNotActive(let s): "the session is \(s.rawValue)"
        case .payloadTooLarge(let limit): "request body larger than \(limit) bytes"
        case .minTTLTooLong(let max): "the IdP issues tokens living at most \(max) s: ask for min_ttl ≤ \(max)"
        case .idpUnavailable: "the identity provider is unavailable; retry later"
        case .idpRejectedClient: "the identity provider refused this client's requests (its credentials, or DPoP proofs it wants: the log says which); an operator must fix the client registration"
        case .idpCertificateRefused(let why): "the identity provider's TLS certificate was refused (\(why)); check the trust anchors of the client registration or TOKENBROKER_PROVIDER_CA_FILE"
        case .refreshBusy: "another refresh of this session is still running; retry shortly"
        case .storeUnavailable: "the database is unavailable"
        case .sealingKeyUnavailable(let id): "stored data is sealed under key '\(id)', which this replica's TOKENBROKER_SEALING_KEYS lacks"
        case .storedValueUnknown(let column, let value): "\(column) holds unknown value '\(value)'; a newer release may have written it"
        case .internalError: "internal error"
        case .proxy(let r): r.message
        }
    }
}
