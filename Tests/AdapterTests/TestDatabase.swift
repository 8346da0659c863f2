import BrokerCore
import BrokerCrypto
import BrokerPostgres
import Foundation

/// TestDatabase is the PostgreSQL that `make test` starts (DATABASE_URL), migrated, with two
/// fresh tenants per use so that tests never see each other's rows.
enum TestDatabase {
    struct Missing: Error, CustomStringConvertible {
        var description: String { "DATABASE_URL is not set: run the tests through `make test`" }
    }

    static func url() throws -> String {
        guard let u = ProcessInfo.processInfo.environment["DATABASE_URL"], !u.isEmpty else { throw Missing() }
        return u
    }

    static let sealer = AESGCMSealer(keys: try! SealingKeys.parse(SealingKeys.generate()))

    static func migrated() throws -> PGPool {
        let pool = PGPool(url: try url(), size: 8)
        _ = try Migrator(directory: sqlDirectory).migrate(pool.dedicated())
        return pool
    }

    static var sqlDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql")
    }

    /// Two new tenants, each with clients "app" and "other".
    static func tenants(_ pool: PGPool) throws -> (String, String) {
        let registry = PostgresRegistryStore(pool: pool, sealer: sealer)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let names = ("a-\(suffix)", "b-\(suffix)")
        for t in [names.0, names.1] {
            _ = try registry.putTenant(id: t, name: t, now: Date())
            for c in ["app", "other"] {
                _ = try registry.putClient(ClientRegistration(tenant: t, id: c, issuer: "https://idp.example", clientID: c,
                                                              authMethod: .clientSecretBasic, redirectURI: "https://b/cb", scopes: ["openid"]),
                                           secret: "s", assertionKey: nil, now: Date())
            }
        }
        return names
    }
}
