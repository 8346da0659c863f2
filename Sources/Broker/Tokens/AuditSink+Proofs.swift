import BrokerCore
import Foundation

extension AuditSink {
    /// One `token.dpop_proof` event per proof handed out (the sink coalesces them like hand-outs).
    func recordProofs(_ token: IssuedToken, actor: String, tenant: String, at: Date) {
        for _ in token.dpopProofs {
            record(AuditEvent(at: at, actor: actor, action: .tokenDPoPProof, tenant: tenant, session: token.sessionID, outcome: "minted"))
        }
    }
}
