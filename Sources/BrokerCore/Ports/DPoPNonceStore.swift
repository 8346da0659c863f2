import Foundation

/// DPoPNonceStore keeps each client's current authorization-server DPoP nonce (`ServerNonce`),
/// so that a nonce one replica learned rides on the next proof of any replica. Every read and
/// write names its tenant.
public protocol DPoPNonceStore: Sendable {
    /// The client's last learned nonce, if any.
    func nonce(tenant: String, client: String) throws -> ServerNonce?

    /// Records `nonce` as its client's current one. Cheap when nothing changed: true only when
    /// the stored value differs from `nonce.value` (or there was none), and only then is the row
    /// written.
    @discardableResult
    func learn(_ nonce: ServerNonce) throws -> Bool
}
