/// BufferedBody is a request body held in memory: small, known, and replayable.
///
/// Thread-safety: one reader at a time, as `ByteSource` says; the position is the only state.
public final class BufferedBody: ByteSource, @unchecked Sendable {
    private let bytes: [UInt8]
    private var position = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let n = min(buffer.count, bytes.count - position)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { src in
            buffer.baseAddress!.copyMemory(from: src.baseAddress! + position, byteCount: n)
        }
        position += n
        return n
    }

    public var length: Int? { bytes.count }
    public var replayable: Bool { true }

    public func rewind() -> Bool {
        position = 0
        return true
    }
}
