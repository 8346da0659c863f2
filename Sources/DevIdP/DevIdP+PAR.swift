import BrokerCore
import BrokerHTTP
import Foundation

extension DevIdP {
    /// RFC 9126 §2: a pushed authorization request, with the client's authentication. The
    /// parameters are checked as /authorize would (client, redirect URI); a `request_uri` in
    /// them is refused (§2.1). Answers 201 `{"request_uri", "expires_in": 60}`.
    func pushAuthorizationRequest(_ req: HTTPRequest) -> HTTPResponse {
        guard state.withLock({ $0.settings.par }) != "off" else { return json(404, ["error": "not_found"]) }
        let form = FormEncoding.decode(req.body)
        guard let clientID = authenticate(req, form) else { return json(401, ["error": "invalid_client"]) }
        guard form["client_id"] == nil || form["client_id"] == clientID, form["request_uri"] == nil,
              let redirect = form["redirect_uri"], state.withLock({ $0.clients[clientID]?.redirectURIs.contains(redirect) == true }) else {
            return json(400, ["error": "invalid_request", "error_description": "client_id, redirect_uri or request_uri"])
        }
        var rng = SystemRandomNumberGenerator()
        let uri = "urn:ietf:params:oauth:request_uri:" + Identifiers.token(bytes: 24, using: &rng)
        var parameters = form.filter { !["client_secret", "client_assertion", "client_assertion_type"].contains($0.key) }
        parameters["client_id"] = clientID
        state.withLock { $0.pushed[uri] = (clientID, parameters, Date().addingTimeInterval(60)) }
        return json(201, ["request_uri": uri, "expires_in": 60])
    }
}
