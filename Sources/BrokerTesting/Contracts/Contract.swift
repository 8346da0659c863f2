import Foundation

/// Contract holds what every store contract shares: a violated expectation throws a
/// Contract.Violation naming what broke. The contracts run against the in-memory fakes (unit
/// tests) and PostgreSQL (adapter tests), every one with two tenants (or two issuers), which
/// proves isolation.
public enum Contract {
    public struct Violation: Error, CustomStringConvertible {
        public let description: String
    }

    static func expect(_ ok: Bool, _ what: String) throws {
        if !ok { throw Violation(description: what) }
    }

    /// The value, or a violation naming what is missing.
    static func some<T>(_ value: T?, _ what: String) throws -> T {
        guard let value else { throw Violation(description: what) }
        return value
    }

    /// A fresh random suffix, so that runs sharing one database never see each other's rows.
    static func unique(_ prefix: String) -> String { prefix + "-" + UUID().uuidString.prefix(8).lowercased() }

    /// A fixed instant the samples are written at.
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
}
