import BrokerCore
import Foundation

/// PGPool lends a fixed number of connections, one thread at a time each, and replaces a
/// connection that broke. Size it at least as large as the number of threads that use it at
/// once (HTTP threads + executor threads), or callers queue.
///
/// Thread-safety: every method may be called from any thread.
public final class PGPool: @unchecked Sendable {
    private let url: String
    private let condition = NSCondition()
    private var idle: [PGConnection] = []
    private var open = 0
    /// Callers waiting for a connection now.
    private var waiting = 0
    private let size: Int
    private let acquireTimeout: TimeInterval

    /// Whether key lookups are prepared: as configured, until a transaction pooler's answer
    /// turns it off for every connection (PreparedStatements).
    public let statements: PreparedStatements
    /// Receives the server's notices and warnings on every connection the pool opens.
    private let notices: (@Sendable (String) -> Void)?
    /// Hears the server identity of every connection the pool opens, before it is used
    /// (FailoverGuard: a connection that finds another server holds refreshes first).
    private let identities: (@Sendable (ServerIdentity) -> Void)?

    /// `prepares`: whether hot statements are prepared per connection (PGConnection.init);
    /// `notices`: where the server's NOTICE and WARNING messages go (the JSON log), else dropped;
    /// `preparesTurnedOff`: hears of the pooler's answer that turned them off, once;
    /// `identities`: the server identity each new connection reads (nil: none is read).
    public init(url: String, size: Int, acquireTimeout: TimeInterval = 10, prepares: Bool = true,
                notices: (@Sendable (String) -> Void)? = nil, preparesTurnedOff: @escaping @Sendable (PGError) -> Void = { _ in },
                identities: (@Sendable (ServerIdentity) -> Void)? = nil) {
        self.url = url
        self.identities = identities
        statements = PreparedStatements(prepares, switchedOff: preparesTurnedOff)
        self.notices = notices
        self.size = max(1, size)
        self.acquireTimeout = acquireTimeout
    }

    /// Connections open, lent out now, callers waiting for one, and the most it opens (metrics).
    public var usage: (open: Int, inUse: Int, waiting: Int, size: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (open, open - idle.count, waiting, size)
    }

    /// Opens one connection now, so that a wrong URL fails at start with a clear message.
    public func check() throws(PGError) {
        let c = try connect()
        condition.lock()
        idle.append(c)
        open += 1
        condition.unlock()
    }

    /// A new connection outside the pool (LISTEN, migrations).
    public func dedicated() throws(PGError) -> PGConnection { try connect() }

    private func connect() throws(PGError) -> PGConnection {
        let c = try PGConnection(url: url, statements: statements)
        c.noticeHandler = notices
        if let identities {
            // Unreadable (a pooler that refuses the functions): not compared; the next
            // statement on a broken connection fails on its own.
            if let id = try? c.serverIdentity() { identities(id) }
        }
        return c
    }

    /// Reads the server identity on a pooled connection and reports it as a new connection's
    /// is: behind a pooler that keeps client connections across a failover, this is how a
    /// replica finds the new server (called every few seconds).
    public func probeIdentity() throws {
        guard let identities else { return }
        let id = try withConnection { c in try c.serverIdentity() }
        identities(id)
    }

    /// Runs `body` with a connection. Connection errors discard the connection.
    @discardableResult
    public func withConnection<T>(_ body: (PGConnection) throws -> T) throws -> T {
        let c = try acquire()
        do {
            let r = try body(c)
            release(c)
            return r
        } catch {
            release(c)
            throw error
        }
    }

    /// Runs `body` inside BEGIN … COMMIT (BEGIN travels with the first statement); any error
    /// rolls back.
    @discardableResult
    public func transaction<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try withConnection { c in
            c.begin()
            do {
                let r = try body(c)
                try c.commit()
                return r
            } catch {
                c.rollback()
                throw error
            }
        }
    }

    private func acquire() throws -> PGConnection {
        condition.lock()
        let deadline = Date().addingTimeInterval(acquireTimeout)
        while idle.isEmpty && open >= size {
            waiting += 1
            let woke = condition.wait(until: deadline)
            waiting -= 1
            guard woke else {
                condition.unlock()
                throw BrokerError.storeUnavailable
            }
        }
        if let c = idle.popLast() {
            condition.unlock()
            return c
        }
        open += 1
        condition.unlock()
        do {
            return try connect()
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func release(_ c: PGConnection) {
        condition.lock()
        if c.isHealthy { idle.append(c) } else { open -= 1 }
        condition.signal()
        condition.unlock()
    }
}
