import BrokerCore

extension PGPool {
    /// Runs store work, turning PostgreSQL errors into the BrokerError callers see.
    @discardableResult
    func run<T>(_ body: (PGConnection) throws -> T) throws -> T {
        do { return try withConnection(body) } catch let e as PGError { throw e.brokerError }
    }
}
