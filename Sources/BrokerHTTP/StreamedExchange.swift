import BrokerCore
import CMicroHTTPD
import Foundation

/// StreamedExchange is one request of a streamed route (Router.addStream) between
/// libmicrohttpd's thread and the handler's worker: the request body's bounded pipe (it is the
/// request's `bodyStream`) and the hand-over of the answer.
///
/// MHD feeds upload pieces in (`offer`); when the pipe is full the piece is left unconsumed and
/// the connection suspended, resumed once the reader drains it. The reader blocks until bytes,
/// the end, or abandonment (the client went away, the body broke the route's limit, or the
/// route answered without reading on). The answer is queued once the request is received whole
/// (MHD cannot answer before): the connection waits for it suspended.
///
/// Thread-safety: one MHD thread and one reader; every field under `cond`. A connection is
/// suspended and resumed under the lock, so a wake-up is never lost.
final class StreamedExchange: ByteSource, @unchecked Sendable {
    let length: Int?
    let limit: Int
    private let bound: Int
    private let cond = NSCondition()
    private var ring: [UInt8]
    private var head = 0, count = 0
    private var received = 0
    private var ended = false
    private var abandoned = false
    /// Over the limit: answered 413 unless an answer came first.
    private(set) var tooLarge = false
    private var answer: HTTPResponse?
    private var connection: OpaquePointer?
    private var suspended = false
    /// MHD is done with the request: nothing may resume it any more.
    private var closed = false
    /// The response's pipe, abandoned when the connection ends.
    var pipe: ResponseBodyPipe?
    /// The daemon whose count of requests in flight holds this one until it completes.
    var daemon: DaemonState?

    /// Bytes read past an answer or past the limit before the connection is simply closed.
    static let slack = 1 << 20

    init(connection: OpaquePointer, length: Int?, limit: Int, hasBody: Bool, bound: Int = 256 * 1024) {
        self.connection = connection
        self.length = length
        self.limit = limit
        // A body of known length below the bound needs no more room than itself.
        self.bound = length.map { min(max($0, 1), bound) } ?? bound
        ring = hasBody ? ResponseBodyPipe.uninitialized(self.bound) : []
        if !hasBody { ended = true }
    }

    var replayable: Bool { false }
    func rewind() -> Bool { false }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        cond.lock()
        while count == 0 && !ended && !abandoned { cond.wait() }
        if count == 0 {
            let r: Int? = abandoned ? nil : 0
            cond.unlock()
            return r
        }
        let n = min(count, buffer.count)
        var left = n, to = 0
        ring.withUnsafeBytes { r in
            while left > 0 {
                let piece = min(left, bound - head)
                buffer.baseAddress!.advanced(by: to).copyMemory(from: r.baseAddress!.advanced(by: head), byteCount: piece)
                head = (head + piece) % bound
                left -= piece
                to += piece
            }
        }
        count -= n
        let resume = wake()
        cond.unlock()
        if let resume { MHD_resume_connection(resume) }
        return n
    }

    /// The suspended connection to resume (under the lock), if any.
    private func wake() -> OpaquePointer? {
        guard suspended, !closed, let c = connection else { return nil }
        suspended = false
        return c
    }

    enum Offer {
        /// Consumed this many bytes; `suspended` when the rest waits for room.
        case took(Int, suspended: Bool)
        /// Close the connection without an answer (far past the limit or an answer).
        case close
    }

    /// An upload piece, on MHD's thread.
    func offer(_ data: UnsafeRawPointer, _ n: Int) -> Offer {
        cond.lock()
        defer { cond.unlock() }
        received += n
        if abandoned || received > limit {
            if !abandoned && received > limit {
                tooLarge = true
                abandoned = true
                cond.broadcast()
            }
            return received > limit + Self.slack ? .close : .took(n, suspended: false)
        }
        let room = bound - count
        let take = min(room, n)
        var tail = (head + count) % bound
        var left = take, from = 0
        ring.withUnsafeMutableBytes { r in
            while left > 0 {
                let piece = min(left, bound - tail)
                r.baseAddress!.advanced(by: tail).copyMemory(from: data.advanced(by: from), byteCount: piece)
                left -= piece
                from += piece
                tail = (tail + piece) % bound
            }
        }
        count += take
        received -= n - take
        if take > 0 { cond.broadcast() }
        guard take < n else { return .took(n, suspended: false) }
        if answer != nil {
            // Answered and not read on: the rest is not wanted, and the reader must not take a
            // cut body for a whole one.
            abandoned = true
            received += n - take
            cond.broadcast()
            return .took(n, suspended: false)
        }
        suspended = true
        if let connection { MHD_suspend_connection(connection) }
        return .took(take, suspended: true)
    }

    /// The upload is complete.
    func end() {
        cond.lock()
        if !abandoned { ended = true }
        cond.broadcast()
        cond.unlock()
    }

    /// The answer, or nil after suspending the connection until it comes (on MHD's thread).
    func answerOrSuspend() -> HTTPResponse? {
        cond.lock()
        defer { cond.unlock() }
        if let a = answer { return a }
        suspended = true
        if let connection { MHD_suspend_connection(connection) }
        return nil
    }

    /// The route's answer, from any thread (the first one counts).
    func respond(_ response: HTTPResponse) {
        cond.lock()
        if answer != nil || closed {
            cond.unlock()
            response.bodyPipe?.abandon()
            return
        }
        answer = response
        let resume = wake()
        cond.unlock()
        if let resume { MHD_resume_connection(resume) }
    }

    /// MHD completed the request (answered, or the connection ended): the reader and the
    /// response's writer are told.
    func close() {
        cond.lock()
        closed = true
        connection = nil
        if !ended { abandoned = true }
        let p = pipe ?? answer?.bodyPipe
        cond.broadcast()
        cond.unlock()
        p?.abandon()
    }
}
