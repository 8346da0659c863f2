/// ByteSource is a body read in pieces by the thread that sends it (the outbound proxy's
/// worker): a request body streamed in from a caller, or bytes kept in memory.
///
/// Thread-safety: one reader at a time; `read` may block until bytes arrive (never on an HTTP
/// server thread). Implementations: `BufferedBody` (bytes in memory, replayable) and the HTTP
/// server's request pipe (streamed, read once).
public protocol ByteSource: AnyObject, Sendable {
    /// Copies up to `buffer.count` bytes into `buffer` and answers how many: 0 at the end of the
    /// body, nil when the body was abandoned (the caller went away, or it broke a limit).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
    /// The body's length when it is known before it is read (a Content-Length), else nil.
    var length: Int? { get }
    /// True when the body can be sent again from its start (`rewind`): a retry after an
    /// upstream's 401 or 429 is made only then.
    var replayable: Bool { get }
    /// Starts the body again from its first byte. False when it cannot (`replayable` is false).
    func rewind() -> Bool
}
