/// TokenTarget names the session a worker wants a token of: by id, or at a client by the
/// provider's subject or by the application's own id of its user (`end_user`). Both lookups
/// choose alike (SessionStore.latestSession): the most recently created active session, else
/// the most recent one, whose state is then answered.
public enum TokenTarget: Sendable, Equatable {
    case session(String)
    case subject(client: String, subject: String)
    case endUser(client: String, endUser: String)
}
