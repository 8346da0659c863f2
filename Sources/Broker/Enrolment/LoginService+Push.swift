import BrokerCore

extension LoginService {
    /// The pushed authorization request (RFC 9126), with the login's DPoP proof when it has one.
    /// A server that refuses a proof for lacking a nonce it never sent (glewlwyd: 403
    /// `invalid_dpop_proof`, no `DPoP-Nonce`) gets the request once more with `dpop_jkt` alone
    /// (RFC 9449 §10.1, `DPoPPushFallback`). Throws `TokenEndpointError`, or when the second
    /// push is refused too, 422 `idp_misconfigured` naming both refusals as the server said them.
    func push(_ client: ClientRegistration, _ query: [(String, String)], dpop: DPoPProof?) throws -> (requestURI: String, expiresIn: Int) {
        do { return try endpoint.pushAuthorizationRequest(client: client, parameters: query, dpop: dpop) } catch {
            guard dpop != nil, case .oauth(let first) = error,
                  DPoPPushFallback.pushWithoutProof(error: first.error, status: first.status, context: first.context) else { throw error }
            do { return try endpoint.pushAuthorizationRequest(client: client, parameters: query, dpop: nil) } catch {
                // A second refusal, in any form, is said with the first: an outage is not one.
                let second: String
                switch error {
                case .oauth(let o): second = o.told
                case .refused, .invalidResponse: second = error.reason
                default: throw error
                }
                throw BrokerError.unprocessable(code: "idp_misconfigured", message: "the issuer refused the pushed authorization request: "
                    + "\(first.told); pushed again with dpop_jkt and no proof (RFC 9449 §10.1): \(second)")
            }
        }
    }
}
