/// BoundTokenRule is what a use of a session's token does when the token is bound to the
/// client's TLS certificate (RFC 8705 §3, `Session.certificateBinding`).
///
/// A worker cannot present such a token: the resource server checks that the TLS connection
/// presents the certificate it is bound to, and only the broker holds its key. So a hand-out
/// is refused (`refuse`), unless the client's registration says its workers hold the same
/// certificate (`hand_out_certificate_bound`). The outbound proxy presents the certificate
/// itself (`present`). Whoever presents the certificate needs a token bound to the one it
/// presents now: after the registration's certificate was replaced, a token bound to the old
/// one is renewed first, with the new one (RFC 8705 §6.3).
public enum BoundTokenRule: Sendable, Equatable {
    /// A hand-out to a worker that does not hold the certificate: a bound token is refused (409).
    case refuse
    /// The user of the token presents the certificate whose thumbprint is `current` (nil: none
    /// known): a token bound to another one is renewed before it is used.
    case present(current: String?)

    /// The rule of a use: the proxy's (`presents`), or a hand-out that the registration allows
    /// or not; `current` is the registration's certificate.
    public static func of(presents: Bool, handOutAllowed: Bool, current: String?) -> BoundTokenRule {
        presents || handOutAllowed ? .present(current: current) : .refuse
    }

    /// Why a hand-out of `s`'s token is refused under this rule, if it is.
    public func refusal(_ s: Session) -> BrokerError? {
        guard case .refuse = self, s.certificateBinding != nil else { return nil }
        return Self.handOutRefused(session: s)
    }

    /// Whether `s`'s token must be renewed before use: it is bound to a certificate other than
    /// the one presented now (the registration's was replaced).
    public func stale(_ s: Session) -> Bool {
        guard case .present(let current?) = self, let bound = s.certificateBinding else { return false }
        return bound != current
    }

    /// What this rule does with a client's app token (client credentials) bound to the
    /// certificate `bound` (nil: not bound): refused (the 409), renewed first (`true`), or used.
    public func appToken(bound: String?, tenant: String, client: String) -> Result<Bool, BrokerError> {
        guard let bound else { return .success(false) }
        switch self {
        case .refuse:
            return .failure(.conflict(code: "token_certificate_bound",
                                      message: "the client's app token is bound to its TLS certificate (cnf x5t#S256, RFC 8705), whose key only the broker holds: "
                                          + "call the API through the outbound proxy, /v1/tenants/\(tenant)/proxy/clients/\(client)/app/{path}; "
                                          + "a client whose workers hold the same certificate is registered with \"hand_out_certificate_bound\": true"))
        case .present(let current):
            return .success(current != nil && current != bound)
        }
    }

    /// Why a token the IdP gave `s`'s client in a token exchange is refused to the worker, if it
    /// is: the exchange went over the client's mutual-TLS connection, and the token came back
    /// bound to its certificate (the outbound proxy does not exchange tokens).
    public func refusal(exchanged token: String, of s: Session) -> BrokerError? {
        guard case .refuse = self, CertificateBinding.thumbprint(ofAccessToken: token) != nil else { return nil }
        return .conflict(code: "token_certificate_bound",
                         message: "the exchanged token is bound to the client's TLS certificate (cnf x5t#S256, RFC 8705), whose key only the broker holds; "
                             + "a client whose workers hold the same certificate is registered with \"hand_out_certificate_bound\": true")
    }

    /// The 409 of a hand-out of a certificate-bound token.
    public static func handOutRefused(session s: Session) -> BrokerError {
        .conflict(code: "token_certificate_bound",
                  message: "the session's access token is bound to the client's TLS certificate (cnf x5t#S256, RFC 8705), whose key only the broker holds: "
                      + "call the API through the outbound proxy, /v1/tenants/\(s.tenant)/proxy/sessions/\(s.id)/{path}; "
                      + "a client whose workers hold the same certificate is registered with \"hand_out_certificate_bound\": true")
    }
}
