/// How an error of any kind becomes the answer to a request, without losing its cause.
extension BrokerError {
    /// `error` as the caller is answered: itself when it is a BrokerError; otherwise
    /// `internalError` (a 500), and `unexpected` hears what it was — the answer never says, so
    /// the log line `unexpected` writes is the only trace of the cause.
    public static func answering(_ error: any Error, unexpected: (_ cause: String) -> Void) -> BrokerError {
        if let e = error as? BrokerError { return e }
        unexpected(cause(of: error))
        return .internalError
    }

    /// An error that is not a BrokerError, named for a log line: its type and its description.
    /// The broker's own error types describe themselves generically (no token, no secret).
    public static func cause(of error: any Error) -> String {
        "\(String(reflecting: type(of: error))): \(error)"
    }
}
