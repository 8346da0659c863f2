import BrokerCore
import Foundation

extension AuditSink {
    /// One `token.dpop_proof` event per proof handed out (the sink coalesces them like hand-outs).
    func recordProofs(_ token: IssuedToken, actor: String, tenant: String, at: Date) {
        recordProofs(token.dpopProofs.count, actor: actor, tenant: tenant, session: token.sessionID, client: nil, at: at)
    }

    /// `count` proofs handed out with a session's token, or with a client's app token.
    func recordProofs(_ count: Int, actor: String, tenant: String, session: String?, client: String?, at: Date) {
        for _ in 0..<count {
            record(AuditEvent(at: at, actor: actor, action: .tokenDPoPProof, tenant: tenant, session: session, outcome: "minted", client: client))
        }
    }
}
