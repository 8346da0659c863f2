/// ByteSink is where a response body goes, piece by piece, as an upstream sends it: the HTTP
/// server's response pipe toward the caller, or memory in tests.
///
/// Thread-safety: one writer at a time; `write` may block while the reader is slower (this
/// back-pressure is what keeps a large body from ever being held whole).
public protocol ByteSink: AnyObject, Sendable {
    /// Passes `bytes` on. False when the reader is gone (the caller disconnected): the writer
    /// stops, and abandons the upstream exchange.
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The body is over: `complete` true when it arrived whole, false when the upstream broke
    /// off (the reader then closes its side without pretending the body ended).
    func finish(complete: Bool)
}
