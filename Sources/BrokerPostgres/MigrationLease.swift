import Foundation
import Synchronization

/// MigrationLease is the right to apply migrations that run outside a transaction: one row of
/// `schema_migration_lease`, held by one migrator until it gives it back or stops renewing it.
///
/// Why a row and not a session-level advisory lock: behind a transaction pooler a session lock
/// stays on whichever server connection took it, held for good once the migrator has gone;
/// a row taken and renewed by single statements works through any pooler that keeps a
/// statement on one server connection. A migrator that dies leaves the row to expire (`ttl`);
/// the next one then applies the interrupted migration again from its start, which every
/// no-transaction migration must allow (CONTRIBUTING.md).
///
/// A waiting migrator polls with short statements rather than blocking in one: a statement
/// that waits holds a snapshot, and CREATE INDEX CONCURRENTLY waits for every such snapshot to
/// end — a blocked waiter and the index build would wait for each other.
final class MigrationLease: Sendable {
    /// How long the row stays taken without renewal.
    static let ttl: TimeInterval = 30
    /// How often the holder renews it.
    static let renewEvery: TimeInterval = 5
    /// How often a waiting migrator asks.
    static let pollEvery: TimeInterval = 0.2

    let holder: String
    private let state = Flags()
    /// Whether a thread renews the lease (else `check` does).
    private let heartbeat: Bool

    /// What the heartbeat found, shared with its thread.
    private final class Flags: Sendable {
        let value = Mutex<(lost: String?, stopped: Bool)>((nil, false))
        func withLock<T>(_ body: (inout (lost: String?, stopped: Bool)) -> T) -> T { value.withLock { body(&$0) } }
    }

    /// Takes the lease, waiting while another migrator holds it. `connect` opens the connection
    /// the heartbeat renews it on (a thread of its own, so that a long index build never lets
    /// it expire); without it the lease is renewed between statements only.
    init(on c: PGConnection, connect: (@Sendable () throws(PGError) -> PGConnection)?) throws(PGError) {
        holder = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8))"
        while try !Self.take(c, holder: holder) { Thread.sleep(forTimeInterval: Self.pollEvery) }
        guard let connect else { heartbeat = false; return }
        let renewer = try connect()
        let holder = holder, state = state
        let thread = Thread {
            while true {
                let deadline = Date().addingTimeInterval(Self.renewEvery)
                while Date() < deadline {
                    if state.withLock({ $0.stopped }) { return }
                    Thread.sleep(forTimeInterval: 0.05)
                }
                do {
                    guard try Self.renew(renewer, holder: holder) else {
                        state.withLock { $0.lost = "another migrator took the migration lease" }
                        return
                    }
                } catch {
                    // A renewal that failed once is tried again; the lease lasts `ttl`.
                    continue
                }
            }
        }
        heartbeat = true
        thread.start()
    }

    /// Throws when the lease was lost (another migrator may be applying): the caller stops
    /// before its next statement. Renews it here when no heartbeat does.
    func check(on c: PGConnection) throws(PGError) {
        if let lost = state.withLock({ $0.lost }) { throw PGError(sqlstate: "55000", message: lost) }
        if !heartbeat, try !Self.renew(c, holder: holder) {
            throw PGError(sqlstate: "55000", message: "another migrator took the migration lease")
        }
    }

    /// Gives the lease back (another migrator may take it at once).
    func release(on c: PGConnection) {
        state.withLock { $0.stopped = true }
        _ = try? c.execute("DELETE FROM schema_migration_lease WHERE holder = \(holder)")
    }

    private static func take(_ c: PGConnection, holder: String) throws(PGError) -> Bool {
        try c.execute("""
            INSERT INTO schema_migration_lease AS l (holder, expires_at) VALUES (\(holder), now() + \(ttl) * interval '1 second')
            ON CONFLICT (scope) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                WHERE l.expires_at < now() OR l.holder = excluded.holder
            RETURNING holder
            """).count == 1
    }

    private static func renew(_ c: PGConnection, holder: String) throws(PGError) -> Bool {
        try c.execute("UPDATE schema_migration_lease SET expires_at = now() + \(ttl) * interval '1 second' WHERE holder = \(holder)").affected == 1
    }
}
