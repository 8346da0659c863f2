// migration-locks: how long each migration keeps writers of `sessions` waiting. On an empty
// database (DATABASE_URL), applies the first migration, loads `--rows` sessions, then applies
// every later migration of `--sql` one at a time while a writer updates random sessions
// without pause; prints, as JSON, the longest any one write waited during each migration.
// Used by the migration lock test (make test) and `scripts/bench.sh migrations`.
//
//     migration-locks [--rows 1000000] [--sql DIR]
import BrokerPostgres
import Foundation
import Synchronization

func argument(_ name: String) -> String? {
    let args = CommandLine.arguments
    return args.firstIndex(of: name).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil }
}

/// The writer's longest wait and count of writes in each phase (a write counts in the phase it
/// started in).
final class Writes: Sendable {
    struct Phase { var longest: Double = 0; var writes = 0; var failures = 0 }
    let state = Mutex<(phase: Int, phases: [Phase], stop: Bool)>((0, [Phase()], false))

    func next() { state.withLock { $0.phases.append(Phase()); $0.phase += 1 } }
    var phase: Int { state.withLock { $0.phase } }
    var stopped: Bool { state.withLock { $0.stop } }
    func stop() { state.withLock { $0.stop = true } }
    func record(_ phase: Int, _ seconds: Double, failed: Bool) {
        state.withLock {
            $0.phases[phase].longest = max($0.phases[phase].longest, seconds)
            $0.phases[phase].writes += 1
            if failed { $0.phases[phase].failures += 1 }
        }
    }
    func phase(_ i: Int) -> Phase { state.withLock { $0.phases[i] } }
}

func main() throws {
    guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
        FileHandle.standardError.write("DATABASE_URL (an empty database) is required\n".data(using: .utf8)!)
        exit(2)
    }
    let rows = Int(argument("--rows") ?? "") ?? 1_000_000
    let sql = URL(fileURLWithPath: argument("--sql") ?? "sql")
    let migrator = try Migrator(directory: sql)
    let c = try PGConnection(url: url, prepares: false)
    let first = migrator.migrations[0].version
    _ = try migrator.migrate(c, through: first)

    // A tenant's sessions as the broker writes them: sealed tokens of a few hundred bytes, one
    // in ten revoked, refresh instants spread over an hour. Pages keep a fifth free, as in a
    // table whose rows are rewritten at every refresh (a freshly packed table has none). The
    // indexes are built after the load, from their own definitions (faster than row by row).
    var started = Date()
    let indexes = try c.execute("""
        SELECT pg_get_indexdef(indexrelid) AS def, c.relname AS name, con.conname AS constraint_name
        FROM pg_index JOIN pg_class c ON c.oid = indexrelid LEFT JOIN pg_constraint con ON con.conindid = indexrelid
        WHERE indrelid = 'sessions'::regclass
        """).map { (def: try $0["def"] as String, name: try $0["name"] as String, constraint: try $0["constraint_name"] as String?) }
    for i in indexes {
        try c.executeScript(i.constraint.map { "ALTER TABLE sessions DROP CONSTRAINT \($0)" } ?? "DROP INDEX \(i.name)")
    }
    try c.executeScript("""
        ALTER TABLE sessions SET (fillfactor = 80);
        INSERT INTO tenants (id, name) VALUES ('bench', 'bench');
        INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, redirect_uri, scopes)
            VALUES ('bench', 'app', 'https://idp.example', 'app', 'none', 'https://b/cb', '{openid}');
        INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, access_token, access_expires_at, refresh_token,
                              state, next_refresh_at, version, granted_at, created_at, last_refreshed_at)
        SELECT 'bench', 's' || lpad(i::text, 8, '0'), 'app', 'user-' || i, 'https://idp.example', '{openid}',
               decode(repeat('ab', 180), 'hex'), now() + interval '1 hour', decode(repeat('cd', 120), 'hex'),
               CASE WHEN i % 10 = 0 THEN 'revoked' ELSE 'active' END, now() + (i % 3600) * interval '1 second', 1,
               now() - interval '1 day', now() - (i % 86400) * interval '1 second', now()
        FROM generate_series(1, \(rows)) AS i;
        """)
    for i in indexes {
        try c.executeScript(i.def)
        if let key = i.constraint { try c.executeScript("ALTER TABLE sessions ADD CONSTRAINT \(key) PRIMARY KEY USING INDEX \(i.name)") }
    }
    try c.executeScript("VACUUM (ANALYZE) sessions")
    let loadSeconds = Date().timeIntervalSince(started)

    let writes = Writes()
    let writer = try PGConnection(url: url, prepares: false)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        defer { done.signal() }
        while !writes.stopped {
            let phase = writes.phase
            let id = "s" + String(format: "%08d", Int.random(in: 1...rows))
            let t0 = Date()
            let failed = (try? writer.execute("UPDATE sessions SET version = version + 1 WHERE tenant_id = 'bench' AND id = \(id)")) == nil
            writes.record(phase, Date().timeIntervalSince(t0), failed: failed)
        }
    }
    thread.start()
    // Phase 0: the writer alone for a second, the baseline. A phase's figures are read once the
    // writer has finished a write of the next phase: the write a migration held up ends just
    // after its COMMIT, and counts in the phase it started in.
    func endPhase() -> Writes.Phase {
        let ended = writes.phase
        writes.next()
        let deadline = Date().addingTimeInterval(10)
        while writes.phase(ended + 1).writes == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        return writes.phase(ended)
    }
    Thread.sleep(forTimeInterval: 1)
    let baseline = endPhase()
    var results: [[String: Any]] = []
    for m in migrator.migrations where m.version > first {
        started = Date()
        _ = try migrator.migrate(c, through: m.version, connect: { () throws(PGError) in try PGConnection(url: url, prepares: false) })
        let seconds = Date().timeIntervalSince(started)
        let p = endPhase()
        results.append(["version": m.version, "name": m.name, "no_transaction": m.noTransaction, "seconds": round3(seconds),
                        "longest_write_wait_ms": round3(p.longest * 1000), "writes": p.writes, "failed_writes": p.failures])
    }
    writes.next()
    writes.stop()
    done.wait()
    let worst = results.max { ($0["longest_write_wait_ms"] as! Double) < ($1["longest_write_wait_ms"] as! Double) }
    let out: [String: Any] = [
        "rows": rows, "load_seconds": round3(loadSeconds), "baseline_longest_write_ms": round3(baseline.longest * 1000),
        "baseline_writes_per_s": baseline.writes, "migrations": results,
        "longest_write_wait_ms": worst?["longest_write_wait_ms"] ?? 0, "worst_migration": worst?["name"] ?? "",
        "migrate_seconds": round3(results.reduce(0) { $0 + ($1["seconds"] as! Double) }),
    ]
    let data = try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}

func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }

do { try main() } catch {
    FileHandle.standardError.write("migration-locks: \(error)\n".data(using: .utf8)!)
    exit(1)
}
