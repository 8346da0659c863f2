import Foundation

/// ClientAssertionSigner makes `private_key_jwt` client assertions (RFC 7523 §2.2, OIDC Core
/// §9): a JWT signed with the client's own key, `iss` = `sub` = client_id, `aud` the endpoint,
/// a fresh `jti`, living one minute.
public protocol ClientAssertionSigner: Sendable {
    func assertion(for client: ClientRegistration, audience: String, now: Date) throws -> String
}
