import Foundation

/// RefreshFault makes the next `remaining` refresh_token grants (of `client`, or of any client
/// when nil) succeed at the IdP — the presented token is consumed and rotated, new tokens are
/// issued — and then go wrong on the way back: answered `delayMS` late (`late`), or, after
/// `delayMS`, the connection closed without any answer (`drop`). This is the lost-response case
/// a client must survive without presenting the rotated token again. `drop_unprocessed` closes
/// the connection without the IdP acting at all (the presented token stays current).
struct RefreshFault: Sendable {
    enum Mode: String, Sendable {
        case late, drop
        case dropUnprocessed = "drop_unprocessed"
    }
    let mode: Mode
    let delayMS: Int
    var remaining: Int
    let client: String?
}

/// Stall holds every token-endpoint request that arrives before `until` until then. With
/// `processFirst` a request is processed (a refresh rotated) on arrival and only its answer is
/// held; otherwise it is processed when the stall ends.
struct Stall: Sendable {
    let until: Date
    let processFirst: Bool
}
