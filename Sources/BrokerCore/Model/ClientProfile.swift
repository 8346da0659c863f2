/// ClientProfile is the security profile a client registration runs under: the broker's
/// standard behaviour, or the FAPI 2.0 Security Profile's client requirements (FAPI2Profile),
/// checked at registration and at every login.
public enum ClientProfile: String, Sendable, CaseIterable {
    case standard
    case fapi2
}
