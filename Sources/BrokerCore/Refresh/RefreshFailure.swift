/// RefreshFailure classifies a failed refresh by what it says about the IdP having acted —
/// status first, then the RFC 6749 §5.2 code, read as the provider's descriptor says
/// (`RefusalCodes`).
public enum RefreshFailure: Sendable, Equatable {
    /// The IdP refused this grant: `invalid_grant`, any other code the descriptor does not name
    /// as retried or as refusing the client, a bare 403. The session needs a new sign-in.
    case grantDead(reason: String)
    /// The IdP refused the client, not the grant: `invalid_client`, `unauthorized_client`, or
    /// 401 (a bare 403 too, for a client that authenticates by its certificate). The session
    /// stays active; an operator must fix the registration.
    case clientRejected
    /// The IdP refused the DPoP proof, or wants one from a session that has no key (RFC 9449
    /// `invalid_dpop_proof`, a second `use_dpop_nonce`): the request was refused before the grant
    /// was looked at, so the refresh token is not consumed and the session stays active — like
    /// `clientRejected`, an operator must change the registration.
    case dpopRequired
    /// The provider's TLS certificate was refused: the request never left, and the session
    /// stays active with its refresh token unspent until the trust or the certificate changes.
    case certificateRefused(reason: String)
    /// The IdP did not act: 5xx, 429, the request never left, metadata unavailable, an endpoint
    /// that is not there (404).
    case outage(retryAfter: Int?)
    /// The IdP refused the refresh in a way that does not say the grant is dead: a code the
    /// descriptor names as retried (`invalid_request` by default), or a bare 400, read as
    /// `invalid_request` (RFC 6749 §5.2's "malformed": glewlwyd answers a wrong client secret and
    /// a disabled refresh token alike with it). The session is kept and retried with backoff:
    /// ending one cannot be undone.
    case retried(reason: String)
    /// The IdP may have acted and the answer is lost: timeout after sending, connection closed,
    /// 504, an unusable 200.
    case ambiguous

    public static func classify(_ e: TokenEndpointError, _ refusals: RefusalCodes = RefusalCodes()) -> RefreshFailure {
        switch e {
        case .oauth(let o):
            // Not token-endpoint codes in RFC 6749 §5.2, but sent by some IdPs when overloaded.
            if o.error == "temporarily_unavailable" || o.error == "server_error" { return .outage(retryAfter: nil) }
            if o.error == "invalid_dpop_proof" || o.error == "use_dpop_nonce" { return .dpopRequired }
            if refusals.clientRefused.contains(o.error) || o.status == 401 { return .clientRejected }
            if refusals.retried.contains(o.error) { return .retried(reason: o.code) }
            return .grantDead(reason: o.code)
        case .refused(let status, _):
            switch status {
            case 401: return .clientRejected
            case 403 where refusals.bareForbiddenRefusesClient: return .clientRejected
            case 400 where refusals.retried.contains("invalid_request"): return .retried(reason: "refused_http_400")
            case 400, 403: return .grantDead(reason: "refused_http_\(status)")
            // 404, 405, 415…: the endpoint is wrong (stale metadata), the grant is not at fault.
            default: return .outage(retryAfter: nil)
            }
        case .transient(_, let after): return .outage(retryAfter: after)
        case .certificateRefused(let why): return .certificateRefused(reason: why)
        case .notSent, .metadata: return .outage(retryAfter: nil)
        case .unanswered, .invalidResponse: return .ambiguous
        }
    }
}
