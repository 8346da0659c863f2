/// TokenTarget names the session a worker wants a token of: by id, or by subject at a client
/// (the subject's most recent active session).
public enum TokenTarget: Sendable, Equatable {
    case session(String)
    case subject(client: String, subject: String)
}
