import BrokerCore
import Testing

/// RFC 9449 §10.1: a push refused for a proof without a nonce, when no nonce was ever sent,
/// is pushed once more with `dpop_jkt` alone; nothing else is.
@Suite("DPoP push fallback: dpop_jkt alone, only after a nonce-less proof was refused")
struct DPoPPushFallbackTests {
    let noNonce = RefusalContext(endpoint: .pushedAuthorizationRequest, proof: true, nonceFrom: nil)

    @Test("glewlwyd's 403 invalid_dpop_proof (and use_dpop_nonce) to a proof without a nonce: pushed again without the proof")
    func nonceLessProofRefused() {
        #expect(DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 403, context: noNonce))
        #expect(DPoPPushFallback.pushWithoutProof(error: "use_dpop_nonce", status: 400, context: noNonce))
    }

    @Test("a proof that carried a nonce, or was already resent with one, is wrong for another reason: no fallback")
    func nonceSentOrResent() {
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 403,
                                                    context: RefusalContext(endpoint: .pushedAuthorizationRequest, proof: true, nonceFrom: .token)))
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 403,
                                                    context: RefusalContext(endpoint: .pushedAuthorizationRequest, proof: true, nonceFrom: nil, resent: true)))
    }

    @Test("no proof sent, another endpoint, another error, a server error: no fallback")
    func otherRefusals() {
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 403,
                                                    context: RefusalContext(endpoint: .pushedAuthorizationRequest, proof: false, nonceFrom: nil)))
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 400,
                                                    context: RefusalContext(endpoint: .token, proof: true, nonceFrom: nil)))
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_request", status: 400, context: noNonce))
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 500, context: noNonce))
        #expect(!DPoPPushFallback.pushWithoutProof(error: "invalid_dpop_proof", status: 403, context: nil))
    }
}
