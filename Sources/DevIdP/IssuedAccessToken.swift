import Foundation

/// IssuedAccessToken is what the IdP remembers of an access token it signed, for introspection
/// (RFC 7662): the token is known by its `jti`, and `digest` (SHA-256 of the whole compact JWS)
/// proves that the string presented is the one issued, whatever keys are published since.
struct IssuedAccessToken: Sendable {
    let digest: [UInt8]
    let client: String
    let subject: String
    let scope: String
    let expires: Date
    /// The refresh-token family it was issued with (code exchange or refresh), if any.
    let family: String?
    /// The DPoP key it is bound to (`cnf.jkt`, RFC 9449 §6), if any.
    var jkt: String? = nil
    /// The client certificate it is bound to (`cnf.x5t#S256`, RFC 8705 §3.1), as the listener
    /// names certificates (SHA-256, lowercase hex), if any.
    var x5t: String? = nil
    /// Its place in the family's access tokens (set by `DevIdPState.record`).
    var number = 0
    /// Revoked by its client (RFC 7009), or killed by `POST /admin/resource/kill`.
    var revoked = false
    var killed = false
}
