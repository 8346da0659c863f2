import BrokerCore
import Foundation

/// MemorySink keeps a streamed body in memory, for tests of what a ByteSink receives.
///
/// Thread-safety: one writer, readers after `finish` (or any time, under the lock).
public final class MemorySink: ByteSink, @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var ended: Bool?

    public init() {}

    public func write(_ piece: UnsafeRawBufferPointer) -> Bool {
        lock.withLock { bytes += piece }
        return true
    }

    public func finish(complete: Bool) { lock.withLock { ended = complete } }

    /// The body so far, as text.
    public var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
    /// Nil until finished; then whether the body arrived whole.
    public var complete: Bool? { lock.withLock { ended } }
}
