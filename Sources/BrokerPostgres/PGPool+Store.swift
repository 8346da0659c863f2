import BrokerCore

extension PGPool {
    /// Runs store work outside a transaction (each statement commits on its own), turning
    /// PostgreSQL errors into the BrokerError callers see.
    @discardableResult
    func run<T>(_ body: (PGConnection) throws -> T) throws -> T {
        do { return try withConnection(body) } catch let e as PGError { throw e.brokerError }
    }

    /// Runs store work inside one transaction (BEGIN … COMMIT, any error rolls back), errors
    /// turned into the BrokerError callers see: the one way the stores open a transaction.
    @discardableResult
    func transact<T>(_ body: (PGConnection) throws -> T) throws -> T {
        do { return try transaction(body) } catch let e as PGError { throw e.brokerError }
    }
}
