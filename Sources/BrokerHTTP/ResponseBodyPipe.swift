import BrokerCore
import CMicroHTTPD
import Foundation

/// ResponseBodyPipe carries a streamed response body from the handler's worker thread (the
/// writer) to libmicrohttpd (the reader), never holding more than `bound` bytes: the writer
/// blocks while the pipe is full. MHD's content reader never blocks: with nothing to copy it
/// suspends the connection (the one safe place besides the access handler) and the next write
/// or `finish` resumes it.
///
/// A known `length` is sent as Content-Length, else the body is chunked. `finish(complete:
/// false)` closes the connection without ending the body properly (never a fake complete
/// body). Once the connection is gone, `write` answers false.
///
/// Thread-safety: one writer thread; MHD's thread reads; all state under one lock.
public final class ResponseBodyPipe: ByteSink, @unchecked Sendable {
    public let length: Int?
    let bound: Int
    private let cond = NSCondition()
    private var ring: [UInt8]
    private var head = 0, count = 0
    private var written = 0
    private var finished = false, complete = false
    /// The connection closed (or the response was dropped): writes answer false.
    private var closed = false
    private var connection: OpaquePointer?
    private var readerSuspended = false
    private var watch: ConnectionDeadlines.Watch?
    private var stallNanoseconds: UInt64 = 0

    /// `bound`: the most held at once; a known `length` below it is all the ring ever holds (a
    /// small answer costs a small buffer, not a zeroed quarter megabyte).
    public init(length: Int?, bound: Int = 256 * 1024) {
        self.length = length
        let most = max(bound, 4096)
        self.bound = length.map { min(max($0, 1), most) } ?? most
        ring = Self.uninitialized(self.bound)
    }

    /// Storage for a ring, not zeroed: every byte is written before it is read.
    static func uninitialized(_ n: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: n) { _, count in count = n }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            cond.lock()
            while count >= bound && !closed { cond.wait() }
            if closed || finished {
                cond.unlock()
                return false
            }
            let n = min(bound - count, bytes.count - offset)
            var tail = (head + count) % bound
            var left = n, from = offset
            ring.withUnsafeMutableBytes { r in
                while left > 0 {
                    let piece = min(left, bound - tail)
                    r.baseAddress!.advanced(by: tail).copyMemory(from: bytes.baseAddress!.advanced(by: from), byteCount: piece)
                    left -= piece
                    from += piece
                    tail = (tail + piece) % bound
                }
            }
            count += n
            written += n
            offset += n
            let resume = takeSuspended()
            cond.unlock()
            if let resume { MHD_resume_connection(resume) }
        }
        return true
    }

    public func finish(complete: Bool) {
        cond.lock()
        if !finished {
            finished = true
            self.complete = complete && (length == nil || written == length)
        }
        let resume = takeSuspended()
        cond.broadcast()
        cond.unlock()
        if let resume { MHD_resume_connection(resume) }
    }

    /// The connection suspended by the reader, to be resumed (under the lock).
    private func takeSuspended() -> OpaquePointer? {
        guard readerSuspended, let c = connection else { return nil }
        readerSuspended = false
        return c
    }

    /// The response is queued on `connection`: from now on an empty pipe suspends it.
    func attach(_ connection: OpaquePointer, watch: ConnectionDeadlines.Watch?, stall: TimeInterval) {
        cond.lock()
        self.connection = connection
        self.watch = watch
        stallNanoseconds = UInt64(stall * 1e9)
        cond.unlock()
    }

    /// The connection is over (or the response was never sent): the writer stops.
    func abandon() {
        cond.lock()
        closed = true
        readerSuspended = false
        connection = nil
        cond.broadcast()
        cond.unlock()
    }

    /// MHD's content reader: copies what is there, or suspends the connection when nothing is.
    func read(into buffer: UnsafeMutableRawPointer, max: Int) -> Int {
        cond.lock()
        defer { cond.unlock() }
        if count > 0 {
            let n = min(count, max)
            var left = n, to = 0
            ring.withUnsafeBytes { r in
                while left > 0 {
                    let piece = min(left, bound - head)
                    buffer.advanced(by: to).copyMemory(from: r.baseAddress!.advanced(by: head), byteCount: piece)
                    head = (head + piece) % bound
                    left -= piece
                    to += piece
                }
            }
            count -= n
            // The client is reading: it has the stall timeout to take the rest.
            watch?.deadline.store(ConnectionDeadlines.now + stallNanoseconds, ordering: .relaxed)
            cond.broadcast()
            return n
        }
        if finished {
            return complete ? Int(tb_MHD_CONTENT_READER_END_OF_STREAM) : Int(tb_MHD_CONTENT_READER_END_WITH_ERROR)
        }
        guard let connection, !closed else { return Int(tb_MHD_CONTENT_READER_END_WITH_ERROR) }
        // Waiting on the writer, not on the client: no deadline; the writer's own timeout bounds it.
        watch?.deadline.store(0, ordering: .relaxed)
        readerSuspended = true
        MHD_suspend_connection(connection)
        return 0
    }
}

/// MHD's content-reader callback of a streamed response (`cls` is its retained pipe).
let pipeReader: MHD_ContentReaderCallback = { cls, _, buf, max in
    guard let cls, let buf else { return Int(tb_MHD_CONTENT_READER_END_WITH_ERROR) }
    return Unmanaged<ResponseBodyPipe>.fromOpaque(cls).takeUnretainedValue().read(into: UnsafeMutableRawPointer(buf), max: max)
}

/// Called when MHD destroys the response: the pipe's writer is told, and the pipe released.
let pipeFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    let p = Unmanaged<ResponseBodyPipe>.fromOpaque(cls)
    p.takeUnretainedValue().abandon()
    p.release()
}
