/// DPoPPushFallback decides whether a pushed authorization request (RFC 9126) that the server
/// refused for its DPoP proof is pushed again with `dpop_jkt` alone and no proof. RFC 9449 §10.1
/// offers both ways of naming the login's key on a push, and either binds the code to it: the
/// token endpoint later takes the code only with a proof of that key.
///
/// It applies to one case: a server that demands a nonce it has never sent. glewlwyd with
/// mandatory nonces refuses a push whose proof lacks its nonce with 403 `invalid_dpop_proof`
/// and no `DPoP-Nonce` header, so a client's very first login — before any answer of that
/// server carried a nonce — could never be pushed with a proof. A push spends nothing (the
/// refused one created no request URI, and no grant exists yet), so pushing once more is safe;
/// the code exchange then learns the nonce from the token endpoint's `use_dpop_nonce`.
public enum DPoPPushFallback {
    /// Whether `refusal` (the push's, with `context`) is answered by one push with `dpop_jkt`
    /// only: a proof refusal of a push that carried a proof without a nonce, that the broker
    /// did not already resend with a nonce (it then holds one: the proof, not the nonce, is wrong).
    public static func pushWithoutProof(error: String, status: Int, context: RefusalContext?) -> Bool {
        guard let c = context, c.endpoint == .pushedAuthorizationRequest, c.proof, c.nonceFrom == nil, !c.resent else { return false }
        return (400..<500).contains(status) && (error == "invalid_dpop_proof" || error == "use_dpop_nonce")
    }
}
