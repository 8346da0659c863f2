/// A token kept in memory: usable while `validUntil` (the worker's monotonic clock: received +
/// expires_in − margin, the margin at most half the lifetime) is far enough away.
struct KeptToken: Sendable {
    let token: Token
    let obtained: Double
    let validUntil: Double

    init(_ token: Token, now: Double, margin: Double) {
        self.token = token
        obtained = now
        validUntil = now + Double(token.expiresIn) - min(margin, Double(token.expiresIn) / 2)
    }

    func serves(now: Double, minTTL: Int) -> Bool { validUntil - now >= Double(max(minTTL, 0)) }
}
