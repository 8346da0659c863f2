import Foundation

/// ReplayGuard remembers token ids across every replica, so that a token is accepted once.
public protocol ReplayGuard: Sendable {
    /// True the first time `jti` of `issuer` is seen (it is then remembered until `until`);
    /// false on every later call.
    func firstUse(issuer: String, jti: String, until: Date) throws -> Bool

    /// Forgets ids whose time has passed.
    func purge(before: Date) throws
}
