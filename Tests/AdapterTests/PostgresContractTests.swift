import BrokerCore
import BrokerPostgres
import BrokerTesting
import Foundation
import Testing

/// Every store port's contract against PostgreSQL, two fresh tenants each (the same contracts
/// the in-memory fakes honour).
@Suite("Every store port's contract: PostgreSQL")
struct PostgresContractTests {
    @Test("registry", arguments: RegistryStoreContract.allCases)
    func registry(_ c: RegistryStoreContract) throws {
        try c.run(PostgresRegistryStore(pool: try TestDatabase.migrated(), sealer: TestDatabase.sealer))
    }

    @Test("pending logins", arguments: LoginStoreContract.allCases)
    func logins(_ c: LoginStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresLoginStore(pool: pool, sealer: TestDatabase.sealer), tenants: try TestDatabase.tenants(pool))
    }

    @Test("revocation and its outbox", arguments: RevocationStoreContract.allCases)
    func revocation(_ c: RevocationStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer), tenants: try TestDatabase.tenants(pool))
    }

    @Test("sign-out jobs", arguments: SignoutStoreContract.allCases)
    func signouts(_ c: SignoutStoreContract) throws {
        let pool = try TestDatabase.migrated()
        try c.run(PostgresSignoutStore(pool: pool), sessions: PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer),
                  tenants: try TestDatabase.tenants(pool))
    }

    @Test("session listing")
    func catalog() throws {
        let pool = try TestDatabase.migrated()
        let sessions = PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer)
        try SessionCatalogContract.run(sessions, sessions: sessions, tenants: try TestDatabase.tenants(pool))
    }

    @Test("audit trail")
    func audit() throws {
        let pool = try TestDatabase.migrated()
        let sink = PostgresAuditSink(pool: pool)
        try AuditLogContract.run(sink, log: sink, tenants: try TestDatabase.tenants(pool))
    }

    @Test("replay guard")
    func replays() throws { try ReplayGuardContract.run(PostgresReplayGuard(pool: try TestDatabase.migrated())) }
}
