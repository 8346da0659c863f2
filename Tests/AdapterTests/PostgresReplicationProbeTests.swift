import Broker
import BrokerCore
import BrokerPostgres
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing

/// The replication mode read from a real primary with a real streaming standby: a cluster of
/// its own (initdb, pg_basebackup -R), so that making it synchronous and then taking its
/// standby away never holds up the test database's writes.
@Suite("Replication mode on a real primary and standby", .serialized,
       .enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/postgresql"), "PostgreSQL server binaries"))
struct PostgresReplicationProbeTests {
    struct ScriptFailed: Error, CustomStringConvertible { let description: String }

    /// Runs `script` with bash (`as_pg` runs a command as postgres when the tests run as root),
    /// waited for with waitpid: Foundation's Process can miss the exit of a script whose child
    /// daemonizes, as pg_ctl start does. Its output goes to a file, shown when it fails.
    static func sh(_ script: String) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("tb-repl-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let full = """
            set -euo pipefail
            exec >\(log) 2>&1
            pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
            as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
            \(script)
            """
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/bash"), strdup("-c"), strdup(full), nil]
        defer { for a in argv { free(a) } }
        guard posix_spawn(&pid, "/bin/bash", nil, nil, argv, environ) == 0 else { throw ScriptFailed(description: "cannot run bash") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard (status >> 8) & 0xff == 0 else { throw ScriptFailed(description: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "script failed") }
    }

    @Test("asynchronous with a streaming standby, synchronous once it is named, writes waiting when it is gone; one report per change")
    func modesOfARealPair() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("tb-repl-\(UUID().uuidString.prefix(8))").path
        let sock = base + "/sock"
        let start = { (dir: String, port: Int, extra: String) in
            "as_pg \"$pgbin/pg_ctl\" -D \(base)/\(dir) -l \(base)/\(dir).log -w -t 30 start -o \"-c listen_addresses='' -c unix_socket_directories='\(sock)' -c port=\(port) \(extra)\" >/dev/null"
        }
        try Self.sh("""
            mkdir -p \(base); chmod 755 \(base); [ "$(id -u)" -eq 0 ] && chown postgres: \(base)
            as_pg mkdir -p \(sock)
            as_pg "$pgbin/initdb" -D \(base)/primary -U postgres --auth=trust >/dev/null
            \(start("primary", 5491, ""))
            as_pg "$pgbin/pg_basebackup" -h \(sock) -p 5491 -U postgres -D \(base)/standby -R
            \(start("standby", 5492, "-c cluster_name=standby1"))
            """)
        defer {
            _ = try? Self.sh("""
                for d in standby primary; do as_pg "$pgbin/pg_ctl" -D \(base)/$d -m immediate -w stop >/dev/null 2>&1 || true; done
                rm -rf \(base)
                """)
        }
        let pool = PGPool(url: "postgresql://postgres@/postgres?host=\(sock)&port=5491", size: 2)
        let reports = Mutex<[ReplicationWatch.Report]>([])
        let monitor = ReplicationMonitor(probe: PostgresReplicationProbe(pool: pool)) { r in reports.withLock { $0.append(r) } }
        /// Reads until `mode` shows (a standby connects, a reload applies, a walsender ends), at most 10 s.
        func awaitMode(_ mode: ReplicationMode) throws {
            let deadline = Date().addingTimeInterval(10)
            repeat {
                try monitor.check()
                if monitor.last?.mode == mode { return }
                Thread.sleep(forTimeInterval: 0.1)
            } while Date() < deadline
            Issue.record("mode \(String(describing: monitor.last?.mode)) after 10 s, not \(mode)")
        }

        try awaitMode(.asynchronous)
        #expect(monitor.last?.synchronousStandbys == 0)
        #expect(monitor.last?.reading.standbys == [ReplicationReading.Standby(name: "standby1", syncState: "async")])

        let admin = try pool.dedicated()
        try admin.executeScript("ALTER SYSTEM SET synchronous_standby_names = 'standby1'")
        try admin.executeScript("SELECT pg_reload_conf()")
        // The walsender takes the new setting a moment after the reload; until then the primary
        // itself says the named standby is not (yet) synchronous. Read once it says so.
        let named = Date().addingTimeInterval(10)
        while Date() < named, try admin.execute("SELECT 1 AS one FROM pg_stat_replication WHERE sync_state = 'sync'").first({ _ in true }) == nil {
            Thread.sleep(forTimeInterval: 0.05)
        }
        try awaitMode(.synchronous)
        #expect(monitor.last?.synchronousStandbys == 1)

        try Self.sh("as_pg \"$pgbin/pg_ctl\" -D \(base)/standby -m immediate -w stop >/dev/null")
        try awaitMode(.synchronousUnavailable)
        #expect(monitor.last?.synchronousStandbys == 0)

        let said = reports.withLock { $0 }
        #expect(said.map(\.mode) == [.asynchronous, .synchronous, .synchronousUnavailable])
        #expect(said.map(\.previous) == [nil, .asynchronous, .synchronous])
    }
}
