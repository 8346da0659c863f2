import Foundation

/// ReplayGuard remembers token ids across every replica, so that a token is accepted once.
public protocol ReplayGuard: Sendable {
    /// True the first time `jti` of `issuer` is seen (it is then remembered until `until`);
    /// false on every later call.
    func firstUse(issuer: String, jti: String, until: Date) throws -> Bool

    /// Whether `jti` of `issuer` was used, without using it: a receiver that must act before it
    /// may spend an id (and spend it only once it has) asks this first.
    func seen(issuer: String, jti: String) throws -> Bool

    /// Forgets ids whose time has passed.
    func purge(before: Date) throws
}
