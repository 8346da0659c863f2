@testable import BrokerApp
import Testing

/// Configuration errors name their variable (the CLI exits 2 with them); a connection string is
/// refused by its shape before libpq sees it, and its value is never repeated.
@Suite struct ConfigErrorTests {
    func error(_ env: [String: String]) -> String? {
        do { _ = try BrokerConfig.load(env, needsSealingKeys: false); return nil } catch let e as BrokerConfig.Invalid {
            return e.description
        } catch { return "\(error)" }
    }

    @Test("a DATABASE_URL that is neither a postgresql:// URL nor key=value settings names the variable, not the value")
    func databaseURLShape() {
        let m = error(["DATABASE_URL": "not a url"])
        #expect(m?.hasPrefix("DATABASE_URL must be a PostgreSQL connection URL") == true)
        #expect(m?.contains("not a url") == false)
        #expect(error(["DATABASE_URL": "mysql://u:secret@db/x"])?.contains("scheme 'mysql'") == true)
        #expect(error(["DATABASE_URL": "mysql://u:secret@db/x"])?.contains("secret") == false)
        #expect(error(["TOKENBROKER_DATABASE_URL": "x"])?.hasPrefix("TOKENBROKER_DATABASE_URL") == true)
        #expect(error(["DATABASE_URL": "postgresql:///db", "TOKENBROKER_LISTEN_DATABASE_URL": "db"])?.hasPrefix("TOKENBROKER_LISTEN_DATABASE_URL") == true)
    }

    @Test("libpq's accepted shapes pass: URLs, key=value settings with quoted values")
    func accepted() {
        for ok in ["postgresql://postgres@/tokenbroker?host=/run/pg", "postgres://u@h:5432/d", "host=/run/pg dbname=tokenbroker",
                   "host = db  password='a b\\' c' dbname=x"] {
            #expect(error(["DATABASE_URL": ok]) == nil, "\(ok)")
        }
        for bad in ["dbname", "host=db x", "password='open", "=x"] {
            #expect(!ConnectionString.settings(Array(bad.utf8)), "\(bad)")
        }
    }

    @Test("a listener's variable is the one that sets its address")
    func listenerVariable() throws {
        let c = try BrokerConfig.load(["DATABASE_URL": "postgresql:///x", "TOKENBROKER_OPS_LISTEN": "127.0.0.1:9101"], needsSealingKeys: false)
        #expect(c.listeners.map(\.variable) == ["TOKENBROKER_LISTEN", "TOKENBROKER_OPS_LISTEN"])
    }
}
