import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// Client authentication at the token and revocation endpoints (RFC 6749 §2.3, OIDC Core §9):
/// client_secret_basic, client_secret_post, private_key_jwt (RFC 7523 §3), or a public client
/// sending only its client_id, or mutual TLS (RFC 8705 §2): the certificate the listener verified
/// on the connection is the one registered for the client, and no secret or assertion comes.
extension DevIdP {
    static let jwtBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// The authenticated client_id, or nil.
    func authenticate(_ req: HTTPRequest, _ form: [String: String]) -> String? {
        var id = form["client_id"], secret = form["client_secret"]
        if let h = req.header("authorization"), h.hasPrefix("Basic "),
           let raw = Data(base64Encoded: String(h.dropFirst(6))), let pair = String(data: raw, encoding: .utf8),
           let colon = pair.firstIndex(of: ":") {
            id = FormEncoding.unescape(Array(pair[..<colon].utf8))
            secret = FormEncoding.unescape(Array(pair[pair.index(after: colon)...].utf8))
        }
        guard let id, let client = state.withLock({ $0.clients[id] }) else { return nil }
        let fapi2 = state.withLock { $0.settings.fapi2 }
        if client.mutualTLS {
            // §2.2 by the registered thumbprint, or §2.1.2 by the subject DN of a certificate the
            // listener verified against its CA.
            let presented = req.clientCertificateSHA256
            let matches = client.tlsCertificateSHA256.map { $0 == presented }
                ?? (presented != nil && req.clientCertificateSubject == client.tlsSubjectDN)
            let ok = secret == nil && form["client_assertion"] == nil && matches
            state.withLock { s in
                if ok { s.clients[id]?.presentedCertificate = presented }
                if let presented { s.stats[id, default: .init()].certificatesSeen.insert(presented) }
                if ok { s.stats[id, default: .init()].mtlsAuthentications += 1 } else { s.stats[id, default: .init()].certificatesRefused += 1 }
                if req.path.hasPrefix("/mtls/") { s.stats[id, default: .init()].mtlsAliasCalls += 1 }
            }
            return ok ? id : nil
        }
        if !client.jwks.isEmpty {
            guard secret == nil, form["client_assertion_type"] == Self.jwtBearer, let jwt = form["client_assertion"],
                  verifyAssertion(jwt, clientID: id, keys: client.jwks, issuer: issuer(for: req), endpoint: req.path, issuerOnly: fapi2) else { return nil }
            return id
        }
        if fapi2 { return nil }   // FAPI 2.0: private_key_jwt only
        if let expected = client.secret { return secret == expected ? id : nil }
        return secret == nil && form["client_assertion"] == nil ? id : nil
    }

    /// RFC 7523 §3: signed by one of the client's keys; iss = sub = client_id; aud the endpoint
    /// or the issuer the request was addressed to (`issuerOnly`, FAPI 2.0 §5.3.2.1: the issuer
    /// identifier, one string, and ES256 or PS256); not expired; jti never seen before.
    private func verifyAssertion(_ jwt: String, clientID: String, keys: [JSONWebKey], issuer: String, endpoint: String, issuerOnly: Bool) -> Bool {
        guard let jws = try? CompactJWS.parse(jwt), let alg = JWSAlgorithm(rawValue: jws.algorithm) else { return false }
        if issuerOnly {
            guard alg != .rs256, jws.claims["aud"] as? String == issuer else { return false }
        }
        let verifier = OpenSSLSignatureVerifier()
        guard keys.contains(where: { (jws.kid == nil || $0.kid == jws.kid)
                && verifier.verify(alg, key: $0, input: jws.signingInput, signature: jws.signature) }) else { return false }
        let c = jws.claims, now = Date().timeIntervalSince1970
        let audiences = (c["aud"] as? [String]) ?? [(c["aud"] as? String) ?? ""]
        guard c["iss"] as? String == clientID, c["sub"] as? String == clientID,
              audiences.contains(where: { $0 == issuer || $0 == issuer + endpoint }),
              let exp = (c["exp"] as? NSNumber)?.doubleValue, exp > now, exp < now + 600,
              let jti = c["jti"] as? String else { return false }
        return state.withLock { s in
            s.stats[clientID, default: .init()].assertions += 1
            return s.usedAssertionIDs.insert(jti).inserted
        }
    }
}
