import Foundation

/// LoginStore keeps pending logins. The callback knows no tenant, only the state: the
/// state's hash is the one key looked up across tenants, and it names exactly one login.
public protocol LoginStore: Sendable {
    func insert(_ login: PendingLogin) throws
    /// Removes and returns the login with this state hash, in one statement: of two callbacks
    /// presenting the same state at once, exactly one gets it. Expired logins are returned too
    /// (the caller says "expired" rather than "unknown") and removed all the same.
    func consume(stateHash: [UInt8]) throws -> PendingLogin?
    /// Deletes logins that expired before `before`; returns how many.
    func purge(expiredBefore before: Date) throws -> Int
}
