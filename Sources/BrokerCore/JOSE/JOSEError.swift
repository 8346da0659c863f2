/// JOSEError is why a JWS or its claims were refused. The reason names the check (a claim or
/// header name), never a value from the token, so it may be shown and logged.
public struct JOSEError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
