import Synchronization
import BrokerCore
import BrokerCrypto
@testable import BrokerPostgres
import BrokerTesting
import Foundation
import Testing

@Suite("PostgreSQL adapter")
struct PostgresStoreTests {
    @Test("PostgreSQL store honours the SessionStore contract", arguments: SessionStoreContract.Case.allCases)
    func contract(_ c: SessionStoreContract.Case) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer), tenants: try TestDatabase.tenants(pool))
    }

    @Test("the server's notices and warnings reach the pool's handler (the JSON log), not libpq's stderr")
    func notices() throws {
        let seen = Mutex<[String]>([])
        let pool = PGPool(url: try TestDatabase.url(), size: 1) { text in seen.withLock { $0.append(text) } }
        try pool.withConnection { c in try c.execute("DO $$ BEGIN RAISE WARNING 'contract notice %', 42; END $$") }
        #expect(seen.withLock { $0 }.contains { $0.hasPrefix("WARNING") && $0.contains("contract notice 42") })
    }

    @Test("tokens are sealed at rest: no token appears in the table, and a moved value does not open")
    func tokensSealedAtRest() throws {
        let pool = try TestDatabase.migrated()
        let tenants = try TestDatabase.tenants(pool)
        let store = PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer)
        let a = SessionStoreContract.sample(tenant: tenants.0), b = SessionStoreContract.sample(tenant: tenants.0)
        try store.insert(a)
        try store.insert(b)
        let dump = try pool.withConnection { c in
            try c.execute("SELECT s::text FROM sessions s WHERE tenant_id = \(tenants.0)")
        }
        let text = (0..<dump.count).compactMap { dump.string($0, 0) }.joined()
        for secret in [a.accessToken!, a.refreshToken!, a.idToken!] {
            // Evaluated outside #expect, whose failure report would print the secret itself.
            let leaked = text.contains(secret) || text.contains(PGTextProbe.hex(secret))
            #expect(!leaked, "a token appears in plain text in the sessions table")
        }
        // Copy b's sealed refresh token onto a's row: it must not open there.
        try pool.withConnection { c in
            try c.execute("""
                UPDATE sessions SET refresh_token = (SELECT refresh_token FROM sessions WHERE tenant_id = \(tenants.0) AND id = \(b.id))
                WHERE tenant_id = \(tenants.0) AND id = \(a.id)
                """)
        }
        #expect(throws: BrokerError.internalError) { try store.session(tenant: tenants.0, id: a.id) }
    }

    @Test("a write that does not bump the version by one is refused, not written, and the process lives on")
    func versionSkipIsRefused() throws {
        let pool = try TestDatabase.migrated()
        let store = PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer)
        let s = SessionStoreContract.sample(tenant: try TestDatabase.tenants(pool).0)
        try store.insert(s)
        var skip = s
        skip.version += 2
        skip.failureCount += 1
        #expect(throws: BrokerError.internalError) { try store.writeIfUnchanged(skip, over: s) }
        #expect(throws: BrokerError.internalError) { try store.withRefreshLock(tenant: s.tenant, id: s.id, timeout: 1) { _ in (skip, ()) } }
        #expect(try store.session(tenant: s.tenant, id: s.id)?.version == s.version)
    }

    @Test("two migrators at once apply each file exactly once")
    func concurrentMigrations() throws {
        let url = try TestDatabase.url()
        let db = "mig_" + UUID().uuidString.prefix(8).lowercased()
        let admin = try PGConnection(url: url)
        try admin.execute("CREATE DATABASE \(raw: db)")
        defer { _ = try? admin.execute("DROP DATABASE \(raw: db) WITH (FORCE)") }
        let dbURL = Self.replacingDatabase(url, with: db)
        let migrator = try Migrator(directory: TestDatabase.sqlDirectory)
        let results = Mutex<[Result<[Int], any Error>]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let r = Result { try migrator.migrate(PGConnection(url: dbURL)) }
            results.withLock { $0.append(r) }
        }
        let applied = try results.withLock { $0 }.map { try $0.get() }
        #expect(applied.flatMap { $0 }.sorted() == migrator.migrations.map(\.version))
        #expect(try migrator.pending(PGConnection(url: dbURL)).isEmpty)
    }

    @Test("SQL values are bound as parameters, never spliced")
    func bindsAreParameters() throws {
        let c = try PGConnection(url: try TestDatabase.url())
        let hostile = "x'); DROP TABLE sessions; --"
        let r = try c.execute("SELECT \(hostile)::text AS a, \(["a\"b", "c\\d"])::text AS b, \([UInt8]([0, 255, 16]))::bytea AS c")
        let row = r.row(0)
        #expect(try row["a"] as String == hostile)
        #expect(try row["b"] as String == "{\"a\\\"b\",\"c\\\\d\"}")
        #expect(try row.bytes("c") == [0, 255, 16])
    }

    @Test("a key lookup is prepared once per connection, other statements never; with prepares off, none is")
    func genericStatementsArePrepared() throws {
        let names = "SELECT count(*) AS n FROM pg_prepared_statements WHERE name LIKE 'tb\\_%'"
        let c = try PGConnection(url: try TestDatabase.url())
        for n in 1...3 {
            let r = try c.execute("SELECT \(n)::int + 1 AS n", plan: .keyLookup)
            _ = try c.execute("SELECT \(n)::int + 2", plan: .generic)
            #expect(try r.row(0)["n"] as Int == n + 1)
        }
        var row = try c.execute(SQL(stringLiteral: names)).row(0)
        #expect(try row["n"] as Int == 2)   // the statement and its plan setting
        let off = try PGConnection(url: try TestDatabase.url(), prepares: false)
        _ = try off.execute("SELECT \(1)::int + 1", plan: .keyLookup)
        row = try off.execute(SQL(stringLiteral: names)).row(0)
        #expect(try row["n"] as Int == 0)
    }

    @Test("the audit buffer's bound holds over all threads' stripes: what does not fit is counted as dropped")
    func auditBufferBound() throws {
        let pool = try TestDatabase.migrated()
        let (tenant, _) = try TestDatabase.tenants(pool)
        let sink = PostgresAuditSink(pool: pool, capacity: 10)
        let done = DispatchGroup()
        for t in 0..<4 {   // four threads, five distinct events each
            done.enter()
            Thread {
                for i in 0..<5 {
                    sink.record(AuditEvent(at: Date(), actor: "k\(t)", action: .tokenIssue, tenant: tenant, session: "ses_\(i)", outcome: "ok"))
                }
                done.leave()
            }.start()
        }
        done.wait()
        #expect(sink.dropped.load(ordering: .relaxed) == 10)
        sink.flush()
        #expect(try sink.events(tenant: tenant, matching: AuditQuery(limit: 100)).records.count == 10)
        sink.record(AuditEvent(at: Date(), actor: "k9", action: .tokenIssue, tenant: tenant, session: "ses_9", outcome: "ok"))
        #expect(sink.dropped.load(ordering: .relaxed) == 10, "a flush makes room again")
    }

    @Test("a flush that finds the buffers empty returns once another flush's events are written: flush, then read, reads them")
    func flushesOneAtATime() throws {
        let pool = try TestDatabase.migrated()
        let (tenant, _) = try TestDatabase.tenants(pool)
        let sink = PostgresAuditSink(pool: pool)
        let url = try TestDatabase.url()
        // A SHARE lock: inserts into the trail wait, reads do not. Held 2 s at most.
        let locked = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchGroup()
        done.enter()
        Thread {
            if let c = try? PGConnection(url: url) {
                _ = try? c.execute("BEGIN")
                _ = try? c.execute("LOCK TABLE audit_events IN SHARE MODE")
                locked.signal()
                _ = release.wait(timeout: .now() + 2)
                _ = try? c.execute("COMMIT")
            } else { locked.signal() }
            done.leave()
        }.start()
        locked.wait()
        sink.record(AuditEvent(at: Date(), actor: "k1", action: .sessionRevoke, tenant: tenant, session: "ses_1", outcome: "ok"))
        done.enter()
        Thread { sink.flush(); done.leave() }.start()   // the periodic flush, say: its INSERT waits on the lock
        let probe = try PGConnection(url: url)
        var waiting = false
        for _ in 0..<500 where !waiting {
            waiting = try probe.execute("SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'audit_events'::regclass AND NOT granted").row(0)["n"] as Int > 0
            if !waiting { usleep(10_000) }
        }
        #expect(waiting)
        sink.flush()   // the audit route's: nothing left to take here
        let seen = try sink.events(tenant: tenant, matching: AuditQuery(limit: 10)).records.count
        release.signal()
        done.wait()
        #expect(seen == 1, "the event the other flush took was not yet written")
    }

    @Test("every change survives its notice, a subject and an end user with the separator in them too")
    func changeNotices() {
        let changes: [Change] = [
            .session(tenant: "t", id: "ses_1"), .apiKey(id: "0123456789abcdef"), .client(tenant: "t", id: "app"), .tenant("t"),
            .subject(tenant: "t", client: "app", subject: "alice|admin"), .endUser(tenant: "t", client: "app", endUser: "user|7 — Zoë"), .resync,
            .scheduled(tenant: "t", id: "ses_1", client: "app", at: Date(timeIntervalSince1970: 1_800_000_000.25), version: 7),
            .scheduled(tenant: "t", id: "ses_1", client: "app", at: nil, version: nil),
        ]
        for c in changes { #expect(PostgresChangeFeed.decode(PostgresChangeFeed.encode(c)) == c) }
        #expect(PostgresChangeFeed.decode("x|y") == nil)
        #expect(PostgresChangeFeed.decode("s|only-one") == nil)
    }

    @Test("the change feed gathers only when busy: 50 reads with notices in a second are immediate, the 51st gathers, a quiet second resets")
    func busyFeed() {
        var busy = PostgresChangeFeed.BusyFeed()
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var answers: [Bool] = []
        for i in 0..<50 { answers.append(busy.read(at: t0.addingTimeInterval(Double(i) * 0.01))) }
        answers.append(busy.read(at: t0.addingTimeInterval(0.6)))
        answers.append(busy.read(at: t0.addingTimeInterval(0.99)))
        answers.append(busy.read(at: t0.addingTimeInterval(1.0)))
        #expect(answers == Array(repeating: false, count: 50) + [true, true, false])
    }

    @Test("the change feed: a replica's own change reaches it before publish returns; another replica hears a burst whole")
    func changeFeedDelivery() async throws {
        let url = try TestDatabase.url()
        let a = PostgresChangeFeed(pool: PGPool(url: url, size: 1), listenURL: url)
        let b = PostgresChangeFeed(pool: PGPool(url: url, size: 1), listenURL: url)
        defer { a.stop(); b.stop() }
        let tag = UUID().uuidString.prefix(8).lowercased()
        let heardA = Mutex<[Change]>([]), heardB = Mutex<[Change]>([]), listenerBusy = Atomic<Bool>(false)
        let publisher = Mutex<pthread_t?>(nil)
        a.subscribe { c in
            guard case .client(let t, _) = c, t.hasPrefix(tag) else { return }
            heardA.withLock { $0.append(c) }
            // A listener busy with a slow change (or gathering a burst) reads nothing meanwhile.
            let inPublisher = publisher.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
            if t.hasSuffix("-slow"), !inPublisher {
                listenerBusy.store(true, ordering: .releasing)
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        b.subscribe { c in if case .client(let t, _) = c, t.hasPrefix(tag) { heardB.withLock { $0.append(c) } } }
        // B listens once a probe of A's comes through (LISTEN starts on B's own thread).
        let deadline = Date().addingTimeInterval(10)
        while heardB.withLock({ $0.isEmpty }), Date() < deadline {
            a.publish(.client(tenant: tag + "-probe", id: "p"))
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!heardB.withLock { $0.isEmpty }, "the second feed never heard the first")
        // The writing replica reads its own write at once, not when its listener next reads.
        publisher.withLock { $0 = pthread_self() }
        a.publish(.client(tenant: tag + "-slow", id: "s"))
        while !listenerBusy.load(ordering: .acquiring), Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let mine = Change.client(tenant: tag + "-own", id: "app")
        a.publish(mine)
        #expect(heardA.withLock { $0.contains(mine) })
        // A burst is read in gulps by a listener, and nothing of it is lost.
        let burst = (0..<300).map { Change.client(tenant: tag + "-burst", id: "c\($0)") }
        for c in burst { a.publish(c) }
        while heardB.withLock({ $0.filter { burst.contains($0) }.count }) < burst.count, Date() < deadline.addingTimeInterval(10) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(heardB.withLock { $0.filter { burst.contains($0) } } == burst)
    }

    @Test("commit(with:) sends the last statements with COMMIT; a failing one commits nothing")
    func commitWithStatements() throws {
        let c = try PGConnection(url: try TestDatabase.url())
        let table = "commit_with_" + UUID().uuidString.prefix(8).lowercased()
        try c.executeScript("CREATE TABLE \(table) (n int PRIMARY KEY)")
        defer { try? c.executeScript("DROP TABLE \(table)") }
        c.begin()
        _ = try c.execute(SQL(stringLiteral: "INSERT INTO \(table) VALUES (1)"))
        let rows = try c.commit(with: [(SQL(stringLiteral: "INSERT INTO \(table) VALUES (2) RETURNING n"), .generic),
                                       (SQL(stringLiteral: "INSERT INTO \(table) VALUES (3)"), .custom)])
        #expect(rows.count == 2 && rows[0].count == 1)
        try c.commit()   // nothing left to commit: no statement, no warning
        #expect(c.isHealthy)
        c.begin()
        _ = try c.execute(SQL(stringLiteral: "INSERT INTO \(table) VALUES (4)"))
        #expect(throws: PGError.self) {
            try c.commit(with: [(SQL(stringLiteral: "INSERT INTO \(table) VALUES (5)"), .custom),
                                (SQL(stringLiteral: "INSERT INTO \(table) VALUES (1)"), .custom)])   // duplicate key
        }
        c.rollback()
        #expect(c.isHealthy)
        let row = try c.execute(SQL(stringLiteral: "SELECT string_agg(n::text, ',' ORDER BY n) AS ns FROM \(table)")).row(0)
        #expect(try row["ns"] as String == "1,2,3")
    }

    static func replacingDatabase(_ url: String, with db: String) -> String {
        // postgresql://user@/NAME?host=... → same with another NAME
        guard let slash = url.range(of: "@/") ?? url.range(of: "//localhost/") else { return url }
        let rest = url[slash.upperBound...]
        let end = rest.firstIndex(of: "?") ?? rest.endIndex
        return String(url[..<slash.upperBound]) + db + String(rest[end...])
    }
}

/// PGTextProbe spells a string as PostgreSQL's bytea hex would.
enum PGTextProbe {
    static func hex(_ s: String) -> String { s.utf8.map { String(format: "%02x", $0) }.joined() }
}
