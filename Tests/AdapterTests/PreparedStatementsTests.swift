@testable import BrokerPostgres
import Foundation
import Synchronization
import Testing

/// A transaction pooler that does not carry prepared statements between server connections,
/// played on one direct connection: DEALLOCATE makes a statement this client prepared missing
/// (26000, as on another server connection), a server-side PREPARE of the broker's name makes
/// it already there (42P05, as another client's on this one).
@Suite("Prepared statements turned off by a pooler's answer")
struct PreparedStatementsTests {
    let lookup: SQL = "SELECT \(41)::int + 1 AS n"

    final class Reports: Sendable { let count = Atomic<Int>(0) }

    /// A connection of its own switch, and how many times that switch reported turning off.
    func connection() throws -> (PGConnection, PreparedStatements, Reports) {
        let reports = Reports()
        let statements = PreparedStatements(true) { error in
            #expect(PreparedStatements.isPoolerLoss(error))
            reports.count.add(1, ordering: .relaxed)
        }
        return (try PGConnection(url: try TestDatabase.url(), statements: statements), statements, reports)
    }

    func preparedCount(_ c: PGConnection) throws -> Int {
        try c.execute("SELECT count(*) AS n FROM pg_prepared_statements WHERE name LIKE 'tb\\_%'").row(0)["n"]
    }

    @Test("a prepared statement gone (26000): turned off once, the statement answered unnamed")
    func missingStatement() throws {
        let (c, statements, reports) = try connection()
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
        _ = try c.execute("DEALLOCATE ALL")
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
        #expect(!statements.enabled && statements.switchedOffByPooler && reports.count.load(ordering: .relaxed) == 1)
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
        #expect(try preparedCount(c) == 0)
        #expect(reports.count.load(ordering: .relaxed) == 1)
    }

    @Test("a prepared statement already there (42P05): turned off, the statement answered unnamed")
    func statementAlreadyThere() throws {
        let (c, statements, reports) = try connection()
        let name = PGConnection.statementName(lookup.text)
        _ = try c.execute(SQL(stringLiteral: "PREPARE \(name)(int) AS SELECT $1::int + 1 AS n"))
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
        #expect(statements.switchedOffByPooler && reports.count.load(ordering: .relaxed) == 1)
    }

    @Test("the first round trip of a transaction is sent again, BEGIN and all: the transaction is whole")
    func firstRoundTripOfATransaction() throws {
        let (c, statements, _) = try connection()
        _ = try c.execute("CREATE TEMP TABLE prepared_marks (n int)")
        _ = try c.execute(lookup, plan: .keyLookup)
        _ = try c.execute("DEALLOCATE ALL")
        c.begin()
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
        _ = try c.execute("INSERT INTO prepared_marks VALUES (1)")
        c.rollback()   // the redo opened the transaction again: the insert goes with it
        #expect(try c.execute("SELECT count(*) AS n FROM prepared_marks").row(0)["n"] as Int == 0)
        #expect(statements.switchedOffByPooler && c.isHealthy)
    }

    @Test("a loss inside a transaction opened earlier is thrown: its earlier statements are gone, only the caller could redo them")
    func lossMidTransaction() throws {
        let (c, statements, _) = try connection()
        c.begin()
        _ = try c.execute(lookup, plan: .keyLookup)
        _ = try c.execute("DEALLOCATE ALL")
        var thrown: PGError?
        do { _ = try c.execute(lookup, plan: .keyLookup) } catch { thrown = error }
        #expect(thrown?.sqlstate == "26000")
        #expect(thrown?.brokerError.code == "store_unavailable")
        #expect(statements.switchedOffByPooler)
        c.rollback()
        #expect(c.isHealthy)
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
    }

    @Test("with prepared statements configured off, the same errors are nobody's: nothing to turn off")
    func configuredOff() throws {
        let statements = PreparedStatements(false)
        let c = try PGConnection(url: try TestDatabase.url(), statements: statements)
        #expect(try c.execute(lookup, plan: .keyLookup).row(0)["n"] as Int == 42)
        #expect(!statements.switchedOffByPooler)
    }
}
