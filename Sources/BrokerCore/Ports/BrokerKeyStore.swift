/// BrokerKeyStore keeps the broker's own signing keys, shared by every replica: one current key
/// and the retired ones still published.
public protocol BrokerKeyStore: Sendable {
    /// Every key, the current one first.
    func keys() throws -> [BrokerKey]
    /// Stores `key` as the current key unless there is one already; returns the current key
    /// (`key`, or the one another replica stored first).
    func addCurrent(_ key: BrokerKey) throws -> BrokerKey
}
