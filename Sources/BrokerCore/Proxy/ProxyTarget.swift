/// ProxyTarget names whose credentials a proxied request carries: a session (by id, or at a
/// client by the provider's subject or the application's own user id, chosen as TokenTarget
/// chooses), or the client's own app token (client credentials).
public enum ProxyTarget: Sendable, Equatable {
    case session(String)
    case subject(client: String, subject: String)
    case endUser(client: String, endUser: String)
    case app(client: String)

    /// The client named by the target, when it names one (a session id does not).
    public var client: String? {
        switch self {
        case .session: nil
        case .subject(let c, _), .endUser(let c, _), .app(let c): c
        }
    }
}
