/// RefreshTrigger is why a refresh flight runs: a caller needs a token (compare versions, honour
/// its requirement), or the session's timer fired (follow the stored schedule).
public enum RefreshTrigger: Sendable, Equatable {
    case demand(seenVersion: Int64, need: TokenRequirement)
    case due
}
