import BrokerCore
import BrokerHTTP
import Foundation

extension DevIdP {
    /// RFC 9126 §2: a pushed authorization request, with the client's authentication. The
    /// parameters are checked as /authorize would (client, redirect URI); a `request_uri` in
    /// them is refused (§2.1). A DPoP proof (RFC 9449 §10.1) binds the code to its key, as
    /// `dpop_jkt` does (both: they must agree); a client that must use DPoP must send one, as
    /// glewlwyd demands. Answers 201 `{"request_uri", "expires_in": 60}`.
    func pushAuthorizationRequest(_ req: HTTPRequest) -> HTTPResponse {
        guard state.withLock({ $0.settings.par != "off" || $0.settings.fapi2 }) else { return json(404, ["error": "not_found"]) }
        var form = FormEncoding.decode(req.body)
        guard let clientID = authenticate(req, form) else { return json(401, ["error": "invalid_client"]) }
        let glewlwyd = glewlwydNonce(clientID)
        let check = checkProof(req, path: "/par", accessToken: nil, nonceRequired: glewlwyd != nil, expected: glewlwyd)
        // glewlwyd's PAR: a proof without the client's current nonce is 403 invalid_dpop_proof,
        // and the nonce is not sent (the client must have learned it from another endpoint).
        if case .nonceNeeded = check {
            state.withLock { $0.stats[clientID, default: .init()].dpopRefusals += 1 }
            return json(403, ["error": "invalid_dpop_proof", "error_description": "Invalid DPoP nonce"])
        }
        if let refusal = tokenRefusal(check) { return refusal }
        if case .valid(let jkt) = check {
            guard form["dpop_jkt"] == nil || form["dpop_jkt"] == jkt else {
                return json(400, ["error": "invalid_dpop_proof", "error_description": "dpop_jkt is not the proof's key"])
            }
            form["dpop_jkt"] = jkt
        } else if state.withLock({ $0.clients[clientID]?.dpopRequired == true || $0.settings.fapi2 }) {
            return json(400, ["error": "invalid_dpop_proof", "error_description": "DPoP required for this client"])
        }
        guard form["client_id"] == nil || form["client_id"] == clientID, form["request_uri"] == nil,
              let redirect = form["redirect_uri"], state.withLock({ $0.clients[clientID]?.redirectURIs.contains(redirect) == true }) else {
            return json(400, ["error": "invalid_request", "error_description": "client_id, redirect_uri or request_uri"])
        }
        var rng = SystemRandomNumberGenerator()
        let uri = "urn:ietf:params:oauth:request_uri:" + Identifiers.token(bytes: 24, using: &rng)
        var parameters = form.filter { !["client_secret", "client_assertion", "client_assertion_type"].contains($0.key) }
        parameters["client_id"] = clientID
        state.withLock { $0.pushed[uri] = (clientID, parameters, Date().addingTimeInterval(60)) }
        return withClientNonce(json(201, ["request_uri": uri, "expires_in": 60]), clientID)
    }
}
