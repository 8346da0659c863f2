import BrokerCore
import Testing

/// RFC 9449 §8: a proof refusal is answered once, with a nonce the broker did not send; nothing
/// else is ever sent twice.
@Suite("DPoP nonce retry: once, only for a proof refusal, only with a new nonce")
struct DPoPNonceRetryTests {
    @Test("use_dpop_nonce with a new nonce is resent once with it")
    func useDPoPNonce() {
        #expect(DPoPNonceRetry.resend(status: 400, error: "use_dpop_nonce", sent: nil, held: "n1", resent: false) == "n1")
        #expect(DPoPNonceRetry.resend(status: 400, error: "use_dpop_nonce", sent: "n0", held: "n1", resent: false) == "n1")
    }

    @Test("invalid_dpop_proof is resent when the broker now holds another nonce (glewlwyd's PAR: 403, no DPoP-Nonce header)")
    func invalidProofWithAnotherNonce() {
        #expect(DPoPNonceRetry.resend(status: 403, error: "invalid_dpop_proof", sent: nil, held: "n1", resent: false) == "n1")
        #expect(DPoPNonceRetry.resend(status: 400, error: "invalid_dpop_proof", sent: "n0", held: "n1", resent: false) == "n1")
    }

    @Test("no new nonce, no resend: the same nonce, or none at all")
    func noNewNonce() {
        #expect(DPoPNonceRetry.resend(status: 400, error: "use_dpop_nonce", sent: "n1", held: "n1", resent: false) == nil)
        #expect(DPoPNonceRetry.resend(status: 400, error: "use_dpop_nonce", sent: nil, held: nil, resent: false) == nil)
        #expect(DPoPNonceRetry.resend(status: 403, error: "invalid_dpop_proof", sent: nil, held: nil, resent: false) == nil)
        #expect(DPoPNonceRetry.resend(status: 403, error: "invalid_dpop_proof", sent: "n1", held: "n1", resent: false) == nil)
    }

    @Test("never a second resend")
    func onceOnly() {
        #expect(DPoPNonceRetry.resend(status: 400, error: "use_dpop_nonce", sent: "n1", held: "n2", resent: true) == nil)
        #expect(DPoPNonceRetry.resend(status: 403, error: "invalid_dpop_proof", sent: "n1", held: "n2", resent: true) == nil)
    }

    @Test("any other refusal is final, whatever nonce is held: a grant might have been spent")
    func otherRefusals() {
        for error in ["invalid_grant", "invalid_client", "invalid_request", "server_error", nil] as [String?] {
            #expect(DPoPNonceRetry.resend(status: 400, error: error, sent: nil, held: "n1", resent: false) == nil, "\(error ?? "no body")")
        }
        #expect(DPoPNonceRetry.resend(status: 200, error: nil, sent: nil, held: "n1", resent: false) == nil)
        #expect(DPoPNonceRetry.resend(status: 500, error: "use_dpop_nonce", sent: nil, held: "n1", resent: false) == nil)
    }
}
