import BrokerCore

/// PGError is a failed statement or connection: the SQLSTATE and libpq's primary message, which
/// names constraints and objects but never row values.
public struct PGError: Error, Sendable, CustomStringConvertible {
    public let sqlstate: String
    public let message: String

    public var description: String { "PostgreSQL \(sqlstate): \(message)" }

    /// Connection-class errors (08…, 57P…): the connection must be replaced.
    public var isConnectionError: Bool { sqlstate.hasPrefix("08") || sqlstate.hasPrefix("57P") }

    /// The BrokerError a caller sees.
    public var brokerError: BrokerError {
        switch sqlstate {
        case "55P03": .refreshBusy                  // lock_not_available: lock_timeout fired
        case "23505": .conflict(code: "conflict", message: "already exists")
        case "23503": .notFound("referenced object")
        default: .storeUnavailable
        }
    }

    /// Connection errors can echo the connection string; drop anything after "password".
    static func redactingPasswords(_ s: String) -> String {
        s.range(of: "password", options: .caseInsensitive).map { String(s[..<$0.lowerBound]) + "password …" } ?? s
    }
}
