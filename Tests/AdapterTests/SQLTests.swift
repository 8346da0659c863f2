import BrokerPostgres
import Testing

@Suite("SQL interpolation")
struct SQLTests {
    @Test("a fragment keeps its values as binds, renumbered after the outer query's")
    func fragments() {
        let tenant = "t1", subject: String? = "alice"
        let fragment: SQL = "FROM sessions WHERE tenant_id = \(tenant) AND (\(subject)::text IS NULL OR subject = \(subject))"
        let q: SQL = "SELECT \(42) AS n, count(*) \(fragment) AND id <> \("x")"
        #expect(q.text == "SELECT $1 AS n, count(*) FROM sessions WHERE tenant_id = $2 AND ($3::text IS NULL OR subject = $4) AND id <> $5")
        #expect(q.binds == ["42", "t1", "alice", "alice", "x"])
    }
}
