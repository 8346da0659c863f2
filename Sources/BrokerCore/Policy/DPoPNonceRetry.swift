/// DPoPNonceRetry decides whether a request an authorization server refused is sent once more
/// with a new DPoP nonce (RFC 9449 §8). A nonce refusal means the server did not act on the
/// request — it checked the proof first — so the one resend spends nothing twice, a refresh
/// token included. Any other refusal is final: a grant might have been spent.
///
/// A proof refusal is `use_dpop_nonce` (§8), or `invalid_dpop_proof` from a server that demands
/// a nonce: its answer carries a `DPoP-Nonce`, or the broker now holds a nonce other than the one
/// it sent (another endpoint or replica learned it meanwhile). glewlwyd's PAR endpoint refuses a
/// proof without its nonce that way: 403 `invalid_dpop_proof` and no `DPoP-Nonce` header.
public enum DPoPNonceRetry {
    /// The nonce to resend with, or nil: resend only the first attempt (`resent` false), only
    /// after a proof refusal, and only with a nonce (`held`, what the broker holds after reading
    /// the answer) that differs from the one sent (`sent`).
    /// The answer's own `DPoP-Nonce` is read into `held` before this is asked, so "the server
    /// demands a nonce" and "the broker now holds another" are one test.
    public static func resend(status: Int, error: String?, sent: String?, held: String?, resent: Bool) -> String? {
        guard !resent, (400..<500).contains(status), let held, held != sent,
              error == "use_dpop_nonce" || error == "invalid_dpop_proof" else { return nil }
        return held
    }
}
