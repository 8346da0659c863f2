import BrokerCore
import BrokerPostgres
import Foundation
import Synchronization
import Testing

/// Which PostgreSQL server a connection is on, read from the real server.
@Suite("Server identity", .serialized)
struct ServerIdentityTests {
    @Test("a connection reads the cluster's system identifier and the timeline WAL is inserted on; a reconnect to the same server is the same identity")
    func readsIdentity() throws {
        let seen = Mutex<[ServerIdentity]>([])
        let pool = PGPool(url: try TestDatabase.url(), size: 2, identities: { id in seen.withLock { $0.append(id) } })
        let c = try pool.dedicated()
        let id = try #require(try c.serverIdentity())
        let system = try #require(id.systemID)
        #expect(UInt64(system) != nil && id.timeline >= 1)
        // As PostgreSQL says it: the first eight hex digits of the current WAL file name.
        let file = try #require(try c.execute("SELECT pg_walfile_name(pg_current_wal_lsn()) AS f").first { r -> String in try r["f"] })
        #expect(Int(file.prefix(8), radix: 16) == id.timeline)
        try pool.probeIdentity()
        let again = try #require(try pool.dedicated().serverIdentity())
        #expect(!again.isOtherServer(than: id))
        // Every connection the pool opened told its identity before it was used (two dedicated,
        // one pooled), and the probe once more.
        #expect(seen.withLock { $0 }.count == 4 && seen.withLock { $0 }.allSatisfy { !$0.isOtherServer(than: id) })
    }

    @Test("a role that may not read pg_control_system() still reads the timeline; the system identifier is then not compared")
    func withoutControlFunctions() throws {
        let url = try TestDatabase.url()
        let admin = try PGConnection(url: url)
        let full = try #require(try admin.serverIdentity())
        try admin.execute("DO $$ BEGIN CREATE ROLE tb_no_control LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        try admin.execute("REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC")
        defer { _ = try? admin.execute("GRANT EXECUTE ON FUNCTION pg_control_system() TO PUBLIC") }
        let c = try PGConnection(url: url.replacingOccurrences(of: "postgres@", with: "tb_no_control@"))
        let id = try #require(try c.serverIdentity())
        #expect(id.systemID == nil && id.timeline == full.timeline && !id.isOtherServer(than: full))
    }
}
