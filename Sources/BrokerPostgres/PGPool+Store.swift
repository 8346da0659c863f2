import BrokerCore

extension PGPool {
    /// Runs store work outside a transaction (each statement commits on its own), turning
    /// PostgreSQL errors into the BrokerError callers see.
    @discardableResult
    func run<T>(_ body: (PGConnection) throws -> T) throws -> T {
        do { return try withConnection(body) } catch let e as PGError { throw e.brokerError } catch let e as SealError {
            throw e.brokerError
        }
    }

    /// Runs store work inside one transaction (BEGIN … COMMIT, any error rolls back), errors
    /// turned into the BrokerError callers see: the one way the stores open a transaction.
    @discardableResult
    func transact<T>(_ body: (PGConnection) throws -> T) throws -> T {
        do { return try transaction(body) } catch let e as PGError { throw e.brokerError } catch let e as SealError {
            throw e.brokerError
        }
    }
}

extension SealError {
    /// A value sealed under a key this keyring lacks is a replica missing a rotated-in key
    /// (503, naming the key id); anything else is internal (tampered or moved data).
    var brokerError: BrokerError { missingKey.map { .sealingKeyUnavailable(keyID: $0) } ?? .internalError }
}
